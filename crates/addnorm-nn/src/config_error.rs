//! [`ConfigError`]: why a module's config cannot be built, as a value. Every config whose
//! `init` validates has a `check(&self) -> Result<(), ConfigError>` that finds what `init`
//! would panic on, without panicking; `init` calls it and panics with the error's message,
//! so the message is the same either way.
//!
//! ```text
//! config.check()  →  Ok(())                         init builds the module
//!                 →  Err(ConfigError { field, message })
//!                                                   init panics with `message`
//! ```
//!
//! # Example
//! ```
//! use addnorm_nn::TransformerStackConfig;
//!
//! let error = TransformerStackConfig::tiny().with_n_heads(3).check().unwrap_err();
//! assert_eq!(error.field(), "TransformerStackConfig.block.d_model");
//! assert_eq!(
//!     error.to_string(),
//!     "TransformerStackConfig.block.d_model (32) must be a positive multiple of n_heads (3)"
//! );
//! ```
//!
//! # Shapes
//! Not applicable: configuration.

use core::fmt;

/// A rule of a config that its values break: the field it is about and the message that
/// names the value (see the [module docs](self)). Its `Display` is the message alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    field: String,
    message: String,
}

impl ConfigError {
    /// The rule about `field` broken, as `message` says.
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The rule about `field` broken, with a message that names the field first:
    /// `"{field} {complaint}"` (`"RotaryConfig.theta must be finite and above 1, got 0.5"`).
    pub(crate) fn of_field(field: impl Into<String>, complaint: impl core::fmt::Display) -> Self {
        let field = field.into();
        let message = format!("{field} {complaint}");
        Self { field, message }
    }

    /// The config and the field the rule is about, as the message names them: a path such
    /// as `"TransformerStackConfig.block.d_model"`, or the config's name alone
    /// (`"FeedForwardConfig"`) when the rule ties several fields. A rule of a config that
    /// another one builds (a block's attention) names the built config
    /// (`"MultiHeadSelfAttentionConfig.n_kv_heads"`).
    pub fn field(&self) -> &str {
        &self.field
    }

    /// What is wrong, naming the expected and the actual value: the message `init` panics
    /// with.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

/// `Ok(())` when `valid`, else the error `refusal` builds (the message is formatted only
/// when it is needed).
pub(crate) fn ensure(
    valid: bool,
    refusal: impl FnOnce() -> ConfigError,
) -> Result<(), ConfigError> {
    if valid { Ok(()) } else { Err(refusal()) }
}

/// The value of a checked config, or a panic with the error's message: how every `init`
/// turns its `check` into its documented panics.
///
/// # Panics
/// If `checked` is an error.
#[track_caller]
pub(crate) fn or_panic<T>(checked: Result<T, ConfigError>) -> T {
    match checked {
        Ok(value) => value,
        Err(error) => panic!("{error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_the_message_and_the_field_is_kept() {
        let error = ConfigError::new("LayerNormConfig.epsilon", "ε must be positive, got 0");
        assert_eq!(error.to_string(), "ε must be positive, got 0");
        assert_eq!(error.field(), "LayerNormConfig.epsilon");
        assert_eq!(error.message(), "ε must be positive, got 0");
        let boxed: Box<dyn std::error::Error> = Box::new(error.clone());
        assert_eq!(boxed.to_string(), error.message());
    }

    #[test]
    fn of_field_names_the_field_first() {
        let error = ConfigError::of_field("RotaryConfig.theta", format_args!("got {}", 0.5));
        assert_eq!(error.field(), "RotaryConfig.theta");
        assert_eq!(error.message(), "RotaryConfig.theta got 0.5");
    }

    #[test]
    fn ensure_refuses_only_what_is_invalid() {
        let refusal = || ConfigError::new("X.a", "a is bad");
        assert_eq!(ensure(true, refusal), Ok(()));
        assert_eq!(ensure(false, refusal), Err(refusal()));
    }

    #[test]
    #[should_panic(expected = "a is bad")]
    fn or_panic_panics_with_the_message() {
        or_panic::<()>(Err(ConfigError::new("X.a", "a is bad")));
    }
}
