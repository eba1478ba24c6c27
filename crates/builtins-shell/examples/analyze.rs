//! Prints the permission analysis of each argument (a development aid).
fn main() {
    for arg in std::env::args().skip(1) {
        println!("{arg}\n  {:?}\n", toolgate_builtins_shell::analyze(&arg));
    }
}
