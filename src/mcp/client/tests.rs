//! Unit tests of `client`.

use super::*;

#[test]
fn names_are_prefixed_cleaned_and_cut() {
    assert_eq!(model_name("fs", "read_file"), "mcp__fs__read_file");
    assert_eq!(model_name("t", "get.time/now"), "mcp__t__get_time_now");
    assert_eq!(model_name("s", &"x".repeat(100)).len(), 64);
    assert!(check_name("fs-1").is_ok());
    for bad in ["", "a b", "a__b", "ü", &"x".repeat(21)] {
        assert!(check_name(bad).is_err(), "{bad:?}");
    }
}
