//! Unit tests of the exec guard.

use super::*;

#[test]
fn code_running_variables_are_known_by_name_and_prefix() {
    for name in [
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "BASH_ENV",
        "NODE_OPTIONS",
        "BASH_FUNC_ls%%",
    ] {
        assert!(runs_code(name.as_bytes()), "{name}");
    }
    for name in ["PATH", "HOME", "RUST_BACKTRACE", "CI", "NODE_ENV"] {
        assert!(!runs_code(name.as_bytes()), "{name}");
    }
}

#[test]
fn a_file_url_is_the_path_it_names() {
    assert_eq!(
        file_url_path(b"file:///usr/lib/a%2Db.js"),
        OsString::from("/usr/lib/a-b.js")
    );
    assert_eq!(file_url_path(b"file://localhost/x"), OsString::from("/x"));
    assert_eq!(file_url_path(b"file:///bad%zz%4"), OsString::from("/bad%zz%4"));
    assert_eq!(file_url_path(b"./plain"), OsString::from("./plain"));
}

#[test]
fn the_loader_is_seen_through() {
    let argv: Vec<OsString> = [
        "ld.so",
        "--library-path",
        "/x",
        "--inhibit-cache",
        "/usr/bin/rm",
        "-f",
        "a",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    assert_eq!(loader_program(&argv), Some(OsString::from("/usr/bin/rm")));
    assert!(is_loader(Path::new("/lib64/ld-linux-x86-64.so.2")));
    assert!(!is_loader(Path::new("/usr/bin/ld")));
}

#[test]
fn a_process_is_found_in_proc() {
    let me = identity(std::process::id()).unwrap_or_else(|| panic!("no /proc entry for this process"));
    assert_eq!(me.tgid, std::process::id());
    assert!(me.start > 0);
}
