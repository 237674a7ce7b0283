mod words;

fn main() {
    let text = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    println!("{} words", words::count_words(&text));
    if let Some(w) = words::longest_word(&text) {
        println!("longest: {w}");
    }
}
