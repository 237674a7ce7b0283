use crate::util::{half, square};

pub fn circle_area(r: f64) -> f64 {
    std::f64::consts::PI * square(r)
}

pub fn rect_area(w: f64, h: f64) -> f64 {
    w * h
}

fn check_positive(x: f64) -> bool {
    x > 0.0
}

pub fn triangle_area(base: f64, height: f64) -> f64 {
    half(base * height)
}

pub fn is_valid_side(x: f64) -> bool {
    check_positive(x) && x.is_finite()
}

fn clamp_side(x: f64) -> f64 {
    x.max(0.0)
}
