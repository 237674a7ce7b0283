/// Arithmetic mean, or None for an empty slice.
pub fn mean(xs: &[f64]) -> Option<f64> {
    if dbg!(xs.is_empty()) {
        return None;
    }
    let sum: f64 = dbg!(xs.iter().sum());
    Some(sum / xs.len() as f64)
}

/// Median (the lower middle value for an even length), or None when empty.
pub fn median(xs: &mut [f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    Some(xs[(xs.len() - 1) / 2])
}
