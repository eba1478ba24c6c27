//! The binary starts and reports its version. (Being an integration test of this package
//! also makes every `cargo test` build the binary the end-to-end tests drive.)

#[test]
fn version_prints_and_exits_zero() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("--version")
        .output()
        .unwrap_or_else(|error| panic!("could not run toolgate: {error}"));
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("toolgate "));
}
