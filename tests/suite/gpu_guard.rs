//! The GPU guard holds: no test builds a GPU device by itself.
//!
//! On a machine with no Vulkan loader (or no NVIDIA driver), constructing a wgpu or CUDA
//! device panics inside cubecl. Every test that needs one must go through
//! [`crate::common::gpu_available`] (via [`crate::on_every_backend!`] or
//! [`crate::common::wgpu_device`]), which prints `SKIPPED …` and returns instead.
//! `.ci/run` proves this at run time by running the test command with the loader hidden;
//! this test catches a new escape at review time, on any machine.

use std::path::{Path, PathBuf};

/// Ways a test could build a GPU device without the guard.
const DIRECT: [&str; 5] = [
    "backend::wgpu::device()",
    "backend::cuda::device()",
    "WgpuDevice::default()",
    "CudaDevice::default()",
    "WgpuDevice::DefaultDevice",
];

/// The guarded accessors, the only files allowed to name a device constructor.
const GUARD: &str = "tests/suite/common.rs";

/// The workspace's root: the suite's package is its `tests/` folder.
fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace root")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every direct device construction in `files`, as `path:line: text`.
fn escapes(root: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        let relative = file.strip_prefix(root).unwrap_or(file);
        if relative == Path::new(GUARD) || relative == Path::new(file!()) {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("read a test source");
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if DIRECT.iter().any(|pattern| code.contains(pattern)) {
                found.push(format!("{}:{}: {}", relative.display(), i + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn no_test_builds_a_gpu_device_by_itself() {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in ["tests", "crates/addnorm-lab/tests"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 10, "found only {} test sources", files.len());
    let found = escapes(root, &files);
    assert!(
        found.is_empty(),
        "tests build a GPU device outside the guard (use common::wgpu_device or \
         on_every_backend!):\n{}",
        found.join("\n")
    );
}

/// The scan itself finds a direct construction (so the test above can fail).
#[test]
fn the_scan_finds_a_direct_device() {
    let dir = std::env::temp_dir().join(format!("addnorm-guard-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("escape.rs");
    std::fs::write(
        &file,
        "// WgpuDevice::default() in a comment is fine\n\
         let device = addnorm::backend::wgpu::device();\n",
    )
    .unwrap();
    let found = escapes(&dir, std::slice::from_ref(&file));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        ["escape.rs:2: let device = addnorm::backend::wgpu::device();"]
    );
}

/// What a doc example must not name: a device built directly, or the *preferred* backend
/// (`addnorm::backend::{Backend, AutodiffBackend, device}`), which is wgpu in the README's
/// test build (`--features wgpu`) and so needs a driver. Examples name
/// `addnorm::backend::ndarray` instead.
const IN_EXAMPLES: [&str; 5] = [
    "addnorm::backend::{Backend",
    "addnorm::backend::{AutodiffBackend",
    "addnorm::backend::device()",
    "addnorm::backend::Backend",
    "addnorm::backend::AutodiffBackend",
];

/// Every line of a doc example (`//!` or `///` comments; fenced code in Markdown) in
/// `text` whose code (not a `//` comment in it) names a GPU device or the preferred
/// backend, as `name:line: text`.
fn example_escapes(name: &str, text: &str) -> Vec<String> {
    let markdown = name.ends_with(".md");
    let mut in_fence = false;
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let example = if markdown {
            if trimmed.starts_with("```") {
                in_fence = !in_fence;
                continue;
            }
            in_fence.then_some(trimmed)
        } else {
            trimmed
                .strip_prefix("//!")
                .or_else(|| trimmed.strip_prefix("///"))
        };
        let Some(example) = example else { continue };
        // A comment inside the example does not run.
        let code = example.split("//").next().unwrap_or_default();
        if DIRECT.iter().chain(&IN_EXAMPLES).any(|p| code.contains(p)) {
            found.push(format!("{name}:{}: {}", i + 1, line.trim()));
        }
    }
    found
}

#[test]
fn no_doc_example_runs_on_the_preferred_backend() {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in [
        "src",
        "crates/addnorm-kernels/src",
        "crates/addnorm-nn/src",
        "crates/addnorm-lab/src",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "found only {} sources", files.len());
    let mut found = Vec::new();
    for file in &files {
        let name = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        found.extend(example_escapes(
            &name,
            &std::fs::read_to_string(file).unwrap(),
        ));
    }
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    found.extend(example_escapes("README.md", &readme));
    assert!(
        found.is_empty(),
        "doc examples that need a GPU driver under --features wgpu (use \
         addnorm::backend::ndarray):\n{}",
        found.join("\n")
    );
}

/// The example scan finds the preferred backend in a doc comment and in fenced Markdown,
/// and leaves prose and the ndarray backend alone.
#[test]
fn the_example_scan_finds_the_preferred_backend() {
    let rust = "/// use addnorm::backend::ndarray::{Backend, device};\n\
                //! use addnorm::backend::{Backend, device};\n\
                let x = 1; // addnorm::backend::{Backend, device} in code is the tests' scan\n";
    assert_eq!(
        example_escapes("a.rs", rust),
        ["a.rs:2: //! use addnorm::backend::{Backend, device};"]
    );
    let markdown = "Prose names `addnorm::backend::{Backend, device}`.\n```rust\n\
                    let d = addnorm::backend::device();\n\
                    // With `--features wgpu`: device WgpuDevice::default().\n```\n";
    assert_eq!(
        example_escapes("R.md", markdown),
        ["R.md:3: let d = addnorm::backend::device();"]
    );
}
