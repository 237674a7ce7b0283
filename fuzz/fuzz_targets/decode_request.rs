//! One stdin line → a request or a protocol error; never a panic. A decoded
//! request re-encodes to JSON that decodes to the same request.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() > pirn::wire::MAX_LINE_BYTES {
        return;
    }
    match pirn::wire::decode_request(data) {
        Ok(req) => {
            let again = serde_json::to_vec(&req).expect("a decoded request re-encodes");
            let back = pirn::wire::decode_request(&again).expect("and decodes again");
            assert_eq!(back, req);
        }
        Err(e) => assert!(!e.message.is_empty()),
    }
});
