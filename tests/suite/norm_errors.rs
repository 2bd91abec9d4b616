//! Bad configs are rejected at `init`, and bad inputs at `forward`, with messages that name
//! the field (or the shapes) and the value.

use addnorm::nn::{DynamicTanhConfig, LayerNormConfig, RmsNormConfig};
use burn::tensor::Tensor;

use crate::common::{PanicCase, assert_panic_messages, panic_message};
use crate::on_every_backend;

fn assert_message(message: &str, needles: &[&str]) {
    for needle in needles {
        assert!(
            message.contains(needle),
            "{needle:?} not in panic message {message:?}"
        );
    }
}

on_every_backend! {
    fn bad_configs_are_rejected_at_init<B>(device) {
        let cases: Vec<PanicCase> = vec![
            (Box::new(|| { LayerNormConfig::new(vec![4]).with_epsilon(0.0).init::<B>(device); }),
             &["LayerNormConfig.epsilon", "got 0"]),
            (Box::new(|| { LayerNormConfig::new(vec![4]).with_epsilon(-1e-5).init::<B>(device); }),
             &["LayerNormConfig.epsilon", "-0.00001"]),
            (Box::new(|| { LayerNormConfig::new(vec![4]).with_epsilon(f64::NAN).init::<B>(device); }),
             &["LayerNormConfig.epsilon", "NaN"]),
            (Box::new(|| { LayerNormConfig::new(vec![]).init::<B>(device); }),
             &["LayerNormConfig.normalized_shape", "got []"]),
            (Box::new(|| { LayerNormConfig::new(vec![3, 0]).init::<B>(device); }),
             &["LayerNormConfig.normalized_shape", "[3, 0]"]),
            (Box::new(|| { RmsNormConfig::new(vec![4]).with_epsilon(0.0).init::<B>(device); }),
             &["RmsNormConfig.epsilon", "got 0"]),
            (Box::new(|| { RmsNormConfig::new(vec![0]).init::<B>(device); }),
             &["RmsNormConfig.normalized_shape", "[0]"]),
            (Box::new(|| { RmsNormConfig::new(vec![4]).with_partial(Some(0.0)).init::<B>(device); }),
             &["RmsNormConfig.partial", "(0, 1]", "got 0"]),
            (Box::new(|| { RmsNormConfig::new(vec![4]).with_partial(Some(1.5)).init::<B>(device); }),
             &["RmsNormConfig.partial", "got 1.5"]),
            (Box::new(|| { RmsNormConfig::new(vec![4]).with_partial(Some(f64::NAN)).init::<B>(device); }),
             &["RmsNormConfig.partial", "NaN"]),
            (Box::new(|| { DynamicTanhConfig::new(vec![]).init::<B>(device); }),
             &["DynamicTanhConfig.normalized_shape"]),
        ];
        assert_panic_messages(cases);
    }

    fn mismatched_input_shapes_name_both_shapes<B>(device) {
        let norm = LayerNormConfig::new(vec![3, 4]).init::<B>(device);
        let message = panic_message(|| { norm.forward(Tensor::<B, 3>::zeros([2, 3, 5], device)); });
        assert_message(&message, &["LayerNorm", "[3, 4]", "[3, 5]", "[2, 3, 5]"]);

        let message = panic_message(|| { norm.forward(Tensor::<B, 1>::zeros([4], device)); });
        assert_message(&message, &["rank 1", "[3, 4]"]);

        let rms = RmsNormConfig::new(vec![8]).init::<B>(device);
        let message = panic_message(|| { rms.forward(Tensor::<B, 2>::zeros([2, 7], device)); });
        assert_message(&message, &["RmsNorm", "[8]", "[7]"]);

        let dyt = DynamicTanhConfig::new(vec![8]).init::<B>(device);
        let message = panic_message(|| { dyt.forward(Tensor::<B, 2>::zeros([2, 9], device)); });
        assert_message(&message, &["DynamicTanh", "[8]", "[9]"]);
    }
}
