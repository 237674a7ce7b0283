use serde::Serialize;

#[derive(Serialize)]
struct Entry {
    account: String,
    cents: i64,
}

fn main() -> anyhow::Result<()> {
    let e = Entry { account: "cash".into(), cents: 1250 };
    println!("{} {}", e.account, e.cents);
    Ok(())
}
