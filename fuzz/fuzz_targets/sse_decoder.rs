//! Untrusted bytes from a model server → SSE events; never a panic, and the
//! same events however the bytes are split into reads (the first input byte
//! picks the read size).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pirn::sse::SseDecoder;

fn events(parts: &mut dyn Iterator<Item = &[u8]>) -> Vec<Vec<u8>> {
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    for part in parts {
        d.feed(part);
        while let Ok(Some(ev)) = d.next_event() {
            out.push(ev.to_vec());
        }
    }
    if let Ok(Some(ev)) = d.end_of_input() {
        out.push(ev.to_vec());
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, body)) = data.split_first() else { return };
    let whole = events(&mut std::iter::once(body));
    let pieces = events(&mut body.chunks(usize::from(split).max(1)));
    assert_eq!(whole, pieces, "events depend on how the stream was split");
});
