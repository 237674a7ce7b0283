//! SessionConfig::new's errors and defaults.

use super::*;
use crate::environment::Environment;
use crate::wire::{InitConfig, ProtocolVersion};

fn env(pairs: &[(&str, &str)]) -> Environment {
    Environment::from_pairs(pairs)
}

#[test]
fn config_errors_say_what_is_wrong() {
    let base = InitConfig { model: "m".into(), ..InitConfig::default() };
    let bad_mode =
        SessionConfig::new(&base, &env(&[("PIRN_APPROVAL_MODE", "yolo")]), Limits::default(), ProtocolVersion::V0_2);
    assert!(bad_mode.unwrap_err().to_string().contains("yolo"));
    let empty = InitConfig { model: " ".into(), ..InitConfig::default() };
    assert!(matches!(
        SessionConfig::new(&empty, &env(&[]), Limits::default(), ProtocolVersion::V0_2),
        Err(ConfigError::EmptyModel)
    ));
    let nowhere = InitConfig { cwd: Some("/nonexistent/pirn".into()), ..base };
    let e = SessionConfig::new(&nowhere, &env(&[]), Limits::default(), ProtocolVersion::V0_2).unwrap_err();
    assert_eq!(e.to_string(), "workspace /nonexistent/pirn is not a directory");
    let answers = InitConfig { model: "m".into(), permission_responses: Some(true), ..InitConfig::default() };
    let e = SessionConfig::new(&answers, &env(&[]), Limits::default(), ProtocolVersion::V0_2).unwrap_err();
    assert!(e.to_string().contains("0.3.0"), "{e}");
    assert!(SessionConfig::new(&answers, &env(&[]), Limits::default(), ProtocolVersion::V0_3).is_ok());
    // A file-block target without the option would silently do nothing.
    let target = InitConfig { model: "m".into(), file_block_target: Some("a.py".into()), ..InitConfig::default() };
    let e = SessionConfig::new(&target, &env(&[]), Limits::default(), ProtocolVersion::V0_3).unwrap_err();
    assert!(e.to_string().contains("config.file_blocks is not true"), "{e}");
    let both = InitConfig { file_blocks: Some(true), tools: vec!["write_file".into()], ..target };
    let c = SessionConfig::new(&both, &env(&[]), Limits::default(), ProtocolVersion::V0_3).unwrap();
    assert_eq!((c.file_blocks, c.file_block_target.as_deref()), (true, Some("a.py")));
    assert!(c.system_prompt.contains("replaces a.py"), "{}", c.system_prompt);
}

#[test]
fn the_model_reading_checks_follow_the_config_then_the_operator_then_the_profile_and_version() {
    let base = InitConfig { model: "m".into(), ..InitConfig::default() };
    let open = |config: &InitConfig, pairs: &[(&str, &str)], version| {
        SessionConfig::new(config, &env(pairs), Limits::default(), version).map(|c| (c.request_check, c.write_check))
    };
    // The default profile makes no side call; the small one reads the
    // request, in 0.3.0 only.
    assert_eq!(open(&base, &[], ProtocolVersion::V0_3).unwrap(), (false, false));
    let small = InitConfig { profile: Some("small".into()), ..base.clone() };
    assert_eq!(open(&small, &[], ProtocolVersion::V0_3).unwrap(), (true, true));
    assert_eq!(open(&small, &[], ProtocolVersion::V0_2).unwrap(), (false, false));
    let measured = InitConfig { model: "qwen2.5-coder-1.5b-instruct".into(), ..base.clone() };
    assert_eq!(open(&measured, &[], ProtocolVersion::V0_3).unwrap(), (true, true), "the table's rule");
    assert_eq!(open(&base, &[("PIRN_PROFILE", "small")], ProtocolVersion::V0_3).unwrap(), (true, true));
    assert_eq!(open(&base, &[], ProtocolVersion::V0_2).unwrap(), (false, false));
    let off = [("PIRN_REQUEST_CHECK", "0"), ("PIRN_WRITE_CHECK", " Off ")];
    assert_eq!(open(&small, &off, ProtocolVersion::V0_3).unwrap(), (false, false), "the operator's switch wins");
    assert_eq!(open(&base, &[("PIRN_WRITE_CHECK", "true")], ProtocolVersion::V0_2).unwrap(), (false, true));
    let set = InitConfig { request_check: Some(true), write_check: Some(false), ..base.clone() };
    assert_eq!(open(&set, &off, ProtocolVersion::V0_2).unwrap(), (true, false), "the config wins");
    let e = open(&base, &[("PIRN_REQUEST_CHECK", "sometimes")], ProtocolVersion::V0_3).unwrap_err();
    assert_eq!(e.to_string(), r#"PIRN_REQUEST_CHECK="sometimes" is not one of true, false, 1, 0, on, off"#);
}
