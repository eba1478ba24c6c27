//! Prints the permission analysis of each argument (a development aid).
fn main() {
    for arg in std::env::args().skip(1) {
        println!("{arg}\n  {:?}\n", builtins_shell::analyze(&arg));
    }
}
