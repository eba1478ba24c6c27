//! Session tools: `todowrite` (the session's todo list, in SQLite) and `question` (ask
//! the user, through the same channel as permission requests).
//!
//! ```
//! use toolgate_builtins_session::{Prompt, QuestionOption, answer_text};
//! let prompt = Prompt {
//!     question: "Which database?".into(),
//!     header: "Database".into(),
//!     options: vec![QuestionOption { label: "SQLite".into(), description: "embedded".into() }],
//!     multiple: false,
//! };
//! assert_eq!(
//!     answer_text(&[prompt], &[vec!["SQLite".into()]]),
//!     "User has answered your questions: \"Which database?\"=\"SQLite\". You can now continue with the user's answers in mind."
//! );
//! ```

mod question;
mod todo;

pub use question::{
    Prompt, QuestionError, QuestionEvent, QuestionInput, QuestionOption, QuestionOutput, QuestionRequest,
    QuestionService, answer_text, question_tool,
};
pub use todo::{Priority, Status, Todo, TodoError, TodoInput, TodoOutput, TodoStore, todowrite_tool};

// The items of other toolgate crates that this crate's signatures name, and those crates
// whole, so that this crate alone is a sufficient dependency (ARCHITECTURE.md, "Re-exports").
#[doc(no_inline)]
pub use toolgate_core;
pub use toolgate_core::{Permissions, Tool};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
