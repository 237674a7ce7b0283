//! What a model call cost in money, in US dollars.
//!
//! Owns: the rules of [`Prices`], the operator's price table (a wire type:
//! `config.prices`, `PIRN_PRICES`, `pirn run --prices`; dollars per million
//! prompt, cached and completion tokens): parsing, checking, pricing a
//! call; and [`call_cost`], the one rule for a call's cost: the provider's own figure when it sends one (OpenRouter's
//! `usage.cost` in the streamed usage chunk, parsed in [`super::chunk`];
//! LiteLLM's `x-litellm-response-cost` header, read in [`super::stream`]),
//! else the price table applied to the call's usage, else unknown (`None`,
//! never a made-up 0). pirn carries no built-in price list: it would go
//! stale.

pub use crate::wire::Prices;
use crate::wire::Usage;

/// The response header LiteLLM's proxy puts its cost of the call in.
pub const LITELLM_COST_HEADER: &str = "x-litellm-response-cost";

impl Prices {
    /// Parses `prompt=3,cached=0.3,completion=15` (the form of
    /// `PIRN_PRICES` and `pirn run --prices`); `cached` may be left out.
    /// Errors name the part that is wrong.
    pub fn parse(text: &str) -> Result<Prices, String> {
        let (mut prompt, mut cached, mut completion) = (None, None, None);
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part.split_once('=').ok_or_else(|| format!("{part:?} is not NAME=DOLLARS"))?;
            let value: f64 = value.trim().parse().map_err(|e| format!("{part:?}: {e}"))?;
            let slot = match key.trim() {
                "prompt" => &mut prompt,
                "cached" => &mut cached,
                "completion" => &mut completion,
                other => return Err(format!("unknown price {other:?} (prompt, cached, completion)")),
            };
            *slot = Some(value);
        }
        let prices = Prices {
            prompt: prompt.ok_or("the prompt price is missing (prompt=DOLLARS per million tokens)")?,
            cached,
            completion: completion.ok_or("the completion price is missing (completion=DOLLARS per million tokens)")?,
        };
        prices.check()?;
        Ok(prices)
    }

    /// Errors: a price that is negative or not a finite number.
    pub fn check(&self) -> Result<(), String> {
        let all = [self.prompt, self.cached.unwrap_or(0.0), self.completion];
        if all.iter().any(|p| !p.is_finite() || *p < 0.0) {
            return Err("prices must be finite numbers of dollars, 0 or more".to_owned());
        }
        Ok(())
    }

    /// The cost of `usage` at these prices (cached tokens at the cached price).
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_tokens.unwrap_or(0).min(usage.prompt_tokens);
        let fresh = usage.prompt_tokens - cached;
        (fresh as f64 * self.prompt
            + cached as f64 * self.cached.unwrap_or(self.prompt)
            + usage.completion_tokens as f64 * self.completion)
            / 1e6
    }

    /// The least a request of `prompt_tokens` can cost: every token at the
    /// cheaper of the prompt and cached prices, and no completion. Used to
    /// stop a send before a call that would pass its cost budget whatever
    /// the model answers.
    pub fn least_cost(&self, prompt_tokens: u64) -> f64 {
        prompt_tokens as f64 * self.prompt.min(self.cached.unwrap_or(self.prompt)) / 1e6
    }
}

/// The cost of one call: `usage.cost_usd` as the provider sent it, else the
/// `header` figure (LiteLLM), else `prices` applied to the usage; `None`
/// when neither the provider nor the operator gave one, or the call
/// reported no usage.
pub fn call_cost(usage: Option<&Usage>, header: Option<f64>, prices: Option<&Prices>) -> Option<f64> {
    let usage = usage?;
    usage.cost_usd.or(header).or_else(|| prices.map(|p| p.cost(usage))).filter(|c| c.is_finite() && *c >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_figure_beats_header_beats_table() {
        let u = Usage {
            prompt_tokens: 1_000_000,
            completion_tokens: 500_000,
            cached_tokens: Some(400_000),
            ..Usage::default()
        };
        let p = Prices::parse("prompt=3, cached=0.3, completion=15").unwrap();
        // 600k fresh at 3, 400k cached at 0.3, 500k out at 15.
        assert!((p.cost(&u) - (1.8 + 0.12 + 7.5)).abs() < 1e-9);
        assert_eq!(call_cost(Some(&u), None, None), None);
        assert_eq!(call_cost(None, Some(1.0), Some(&p)), None);
        assert_eq!(call_cost(Some(&u), Some(0.25), Some(&p)), Some(0.25));
        let reported = Usage { cost_usd: Some(0.5), ..u };
        assert_eq!(call_cost(Some(&reported), Some(0.25), Some(&p)), Some(0.5));
        assert!((p.least_cost(1_000_000) - 0.3).abs() < 1e-9);
    }

    #[test]
    fn bad_tables_are_refused() {
        assert!(Prices::parse("prompt=3").unwrap_err().contains("completion"));
        assert!(Prices::parse("prompt=3,completion=x").is_err());
        assert!(Prices::parse("prompt=-1,completion=1").is_err());
        assert!(Prices::parse("input=1,completion=1").unwrap_err().contains("unknown"));
        assert_eq!(Prices::parse("prompt=1,completion=2").unwrap().cached, None);
    }
}
