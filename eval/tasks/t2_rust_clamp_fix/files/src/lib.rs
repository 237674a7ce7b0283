/// Limits x to the range [lo, hi].
pub fn clamp(x: i32, lo: i32, hi: i32) -> i32 {
    if x < lo {
        lo
    } else if x > hi {
        x
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside() {
        assert_eq!(clamp(5, 0, 10), 5);
    }

    #[test]
    fn below() {
        assert_eq!(clamp(-3, 0, 10), 0);
    }

    #[test]
    fn above() {
        assert_eq!(clamp(42, 0, 10), 10);
    }
}
