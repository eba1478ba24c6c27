//! Prints tree-sitter-bash's tree for each argument (a development aid).
#![allow(clippy::unwrap_used, clippy::expect_used)]
fn main() {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&tree_sitter_bash::LANGUAGE.into()).unwrap();
    for arg in std::env::args().skip(1) {
        let tree = parser.parse(&arg, None).unwrap();
        println!("{arg}\n  {}\n", tree.root_node().to_sexp());
    }
}
