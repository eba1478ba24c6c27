//! The tool handle, its builder and the fixed settle order.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::future::CatchUnwind;
use crate::schema::schema_for;
use crate::{BoxFuture, Content, Context, Refusal, ToolOutput};

/// A failure the model should see: the call ran (or was refused) and produced a message.
///
/// Anything else going wrong (a panic) is a [`Defect`], which settle keeps apart.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolFailure {
    message: String,
    refusal: Option<Refusal>,
}

impl ToolFailure {
    /// A failure with the given message.
    pub fn new(message: impl Into<String>) -> Self {
        ToolFailure {
            message: message.into(),
            refusal: None,
        }
    }

    /// The message the model sees.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The permission refusal behind this failure, if any.
    pub fn refusal(&self) -> Option<&Refusal> {
        self.refusal.as_ref()
    }

    /// True when a person declined a permission: the agent loop should stop.
    pub fn is_declined(&self) -> bool {
        self.refusal.as_ref().is_some_and(Refusal::stops_loop)
    }

    /// Keeps the refusal but replaces the message, for tools that report refusals in
    /// their own words (`Unable to edit <path>`).
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }
}

impl fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolFailure {}

impl From<Refusal> for ToolFailure {
    fn from(refusal: Refusal) -> Self {
        ToolFailure {
            message: refusal.to_string(),
            refusal: Some(refusal),
        }
    }
}

/// Something went wrong that is not the tool's answer: the executor panicked.
///
/// Settle never turns this into a model-facing error, so a caller can tell a bug from a
/// tool's refusal and decide (log, abort the turn) for itself.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Defect {
    /// The executor panicked with this message.
    #[error("tool executor panicked: {0}")]
    Panicked(String),
}

/// The outcome of a call that did not hit a defect: an output or a model-facing failure.
pub type Outcome = Result<ToolOutput, ToolFailure>;

/// What a model is told about a tool: `{name, description, inputSchema, outputSchema}`.
///
/// The schemas are built once per tool, on the first definition asked for, and shared by
/// every definition of it, so materializing a catalog each turn copies pointers, not JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ModelDefinition {
    /// The registered name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: Arc<str>,
    /// JSON Schema of the input, inline, in the shape providers accept.
    #[serde(rename = "inputSchema")]
    pub input_schema: Arc<Value>,
    /// JSON Schema of the output.
    #[serde(rename = "outputSchema")]
    pub output_schema: Arc<Value>,
    /// A short name for people (a client's tool list, a permission form); `None` when
    /// the tool gave none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<Arc<str>>,
    /// What the tool says about its effects, for clients that show or sort by them.
    #[serde(skip_serializing_if = "Annotations::is_empty")]
    pub annotations: Annotations,
}

/// What a tool says about its effects: hints for clients (MCP's tool annotations),
/// never a decision — permission rules alone decide what runs. `None` is "not said".
///
/// ```
/// use toolgate_core::Annotations;
///
/// let read = Annotations::read_only();
/// assert_eq!(read.read_only, Some(true));
/// assert!(Annotations::default().is_empty());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Annotations {
    /// The tool does not change its environment.
    #[serde(rename = "readOnlyHint", skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The tool may overwrite or delete what exists (meaningful when not read-only).
    #[serde(rename = "destructiveHint", skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling it again with the same input changes nothing more.
    #[serde(rename = "idempotentHint", skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The tool reaches outside the project (the network, other systems).
    #[serde(rename = "openWorldHint", skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl Annotations {
    /// A tool that only reads (read-only, idempotent), within the project.
    pub fn read_only() -> Self {
        Annotations {
            read_only: Some(true),
            destructive: Some(false),
            idempotent: Some(true),
            open_world: Some(false),
        }
    }

    /// A tool that changes what exists and may overwrite or remove it, within the project.
    pub fn destructive() -> Self {
        Annotations {
            read_only: Some(false),
            destructive: Some(true),
            idempotent: Some(false),
            open_world: Some(false),
        }
    }

    /// A tool that changes only state of its own and overwrites nothing else.
    pub fn additive() -> Self {
        Annotations {
            read_only: Some(false),
            destructive: Some(false),
            idempotent: Some(false),
            open_world: Some(false),
        }
    }

    /// The same hints, idempotent as given.
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = Some(idempotent);
        self
    }

    /// The same hints, reaching outside the project as given.
    pub fn open_world(mut self, open_world: bool) -> Self {
        self.open_world = Some(open_world);
        self
    }

    /// Hints as a server gave them, each possibly absent.
    pub fn from_hints(
        read_only: Option<bool>,
        destructive: Option<bool>,
        idempotent: Option<bool>,
        open_world: Option<bool>,
    ) -> Self {
        Annotations {
            read_only,
            destructive,
            idempotent,
            open_world,
        }
    }

    /// True when nothing is said.
    pub fn is_empty(&self) -> bool {
        *self == Annotations::default()
    }
}

/// The type-erased executor behind a handle.
trait Runtime: Send + Sync {
    fn run(self: Arc<Self>, input: Value, ctx: Context) -> BoxFuture<'static, Outcome>;
}

type Projection<O> = Box<dyn Fn(&O) -> Vec<Content> + Send + Sync>;

struct Typed<I, O, F> {
    execute: F,
    project: Option<Projection<O>>,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O, F, Fut> Runtime for Typed<I, O, F>
where
    I: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    F: Fn(I, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolFailure>> + Send + 'static,
{
    fn run(self: Arc<Self>, input: Value, ctx: Context) -> BoxFuture<'static, Outcome> {
        Box::pin(async move {
            // 1. decode: invalid input never reaches the executor.
            let input: I = serde_json::from_value(input)
                .map_err(|error| ToolFailure::new(format!("Invalid tool input: {error}")))?;
            // 2. execute: a ToolFailure passes through as is.
            let output = (self.execute)(input, ctx).await?;
            // 3. encode: an output that cannot be encoded is never a success.
            let structured = serde_json::to_value(&output).map_err(|error| {
                ToolFailure::new(format!("Tool returned an invalid value for its output schema: {error}"))
            })?;
            // 4. project to model content.
            let content = match (&self.project, &structured) {
                (Some(project), _) => project(&output),
                (None, Value::String(text)) => vec![Content::text(text.clone())],
                (None, _) => Vec::new(),
            };
            Ok(ToolOutput::new(structured, content))
        })
    }
}

/// The input and output schemas of a tool.
type Schemas = (Arc<Value>, Arc<Value>);

struct Inner {
    description: Arc<str>,
    title: Option<Arc<str>>,
    annotations: Annotations,
    /// Built on first use: a process that calls one tool builds no other tool's schema.
    schemas: OnceLock<Schemas>,
    /// Generates the schemas (`schema_for::<I>`, `schema_for::<O>`).
    make_schemas: fn() -> Schemas,
    runtime: Arc<dyn Runtime>,
}

impl Inner {
    fn schemas(&self) -> &Schemas {
        self.schemas.get_or_init(self.make_schemas)
    }
}

/// An opaque, cheaply cloneable tool.
///
/// Built with [`Tool::builder`]. Nothing outside this crate can reach the executor or the
/// schemas except through [`Tool::definition`] and [`Tool::settle`].
///
/// ```
/// use toolgate_core::{Context, Tool, ToolFailure};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Echo { text: String }
///
/// let echo = Tool::builder("Repeat the text.", |input: Echo, _ctx: Context| async move {
///     Ok::<_, ToolFailure>(input.text)
/// })
/// .build();
/// assert_eq!(echo.definition("echo").name, "echo");
/// ```
#[derive(Clone)]
pub struct Tool {
    inner: Arc<Inner>,
    permission: Option<Arc<str>>,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("description", &self.inner.description)
            .field("permission", &self.permission)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// Starts a tool from its description and its executor.
    ///
    /// `I` is the input type (decoded from the model's JSON, described by its schema);
    /// the executor's `O` is the output type. The executor captures whatever services it
    /// needs (a `Location`, a `Permissions`).
    pub fn builder<I, O, F, Fut>(description: impl Into<String>, execute: F) -> ToolBuilder<I, O, F>
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + JsonSchema + Send + 'static,
        F: Fn(I, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolFailure>> + Send + 'static,
    {
        ToolBuilder {
            description: description.into(),
            title: None,
            annotations: Annotations::default(),
            execute,
            project: None,
            _types: PhantomData,
        }
    }

    /// Starts a tool whose input is described by a JSON Schema known only at run time
    /// (a tool of an MCP server), where [`Tool::builder`] needs a Rust type.
    ///
    /// The settle order is the same: `validate` stands in for decoding (a rejected input
    /// fails with `Invalid tool input: <reason>` and `execute` never runs), then
    /// `execute`, then the optional output validator ([`SchemaToolBuilder::output_schema`])
    /// as the encode step. `execute` returns the model content itself.
    ///
    /// ```
    /// use toolgate_core::{Context, Tool, ToolOutput};
    ///
    /// let schema = serde_json::json!({"type": "object", "required": ["text"]});
    /// let echo = Tool::from_schema(
    ///     "Repeat the text.",
    ///     schema,
    ///     |input| match input.get("text") {
    ///         Some(serde_json::Value::String(_)) => Ok(()),
    ///         _ => Err("`text` must be a string".to_string()),
    ///     },
    ///     |input, _ctx: Context| async move { Ok(ToolOutput::text(input["text"].as_str().unwrap_or(""))) },
    /// )
    /// .build();
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let bad = rt.block_on(echo.settle(serde_json::json!({"text": 1}), Context::default())).unwrap();
    /// assert_eq!(bad.unwrap_err().message(), "Invalid tool input: `text` must be a string");
    /// ```
    pub fn from_schema<F, Fut>(
        description: impl Into<String>,
        input_schema: Value,
        validate: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static,
        execute: F,
    ) -> SchemaToolBuilder
    where
        F: Fn(Value, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolFailure>> + Send + 'static,
    {
        SchemaToolBuilder {
            description: description.into(),
            title: None,
            annotations: Annotations::default(),
            input_schema,
            output_schema: Value::Object(serde_json::Map::new()),
            validate_input: Arc::new(validate),
            validate_output: None,
            execute: Box::new(move |input, ctx| Box::pin(execute(input, ctx))),
        }
    }

    /// The definition the model sees under `name`.
    pub fn definition(&self, name: &str) -> ModelDefinition {
        let (input_schema, output_schema) = self.inner.schemas();
        ModelDefinition {
            name: name.to_string(),
            description: Arc::clone(&self.inner.description),
            input_schema: Arc::clone(input_schema),
            output_schema: Arc::clone(output_schema),
            title: self.inner.title.clone(),
            annotations: self.inner.annotations,
        }
    }

    /// A new handle on the same executor that asks permission as `action`
    /// (`write`, `edit` and `apply_patch` all ask as `edit`). The original handle and
    /// every other registration of it are unaffected.
    pub fn with_permission(&self, action: impl Into<String>) -> Tool {
        Tool {
            inner: Arc::clone(&self.inner),
            permission: Some(Arc::from(action.into())),
        }
    }

    /// The permission action of this handle registered as `name`: its label, else `name`.
    pub fn permission_action<'a>(&'a self, name: &'a str) -> &'a str {
        self.permission.as_deref().unwrap_or(name)
    }

    /// Runs one call in the fixed order: decode input, execute, encode output, project.
    ///
    /// The outer `Result` is `Err` only for a [`Defect`] (the executor panicked). Dropping
    /// the returned future cancels the call; nothing is reported for it.
    pub async fn settle(&self, input: Value, ctx: Context) -> Result<Outcome, Defect> {
        let run = Arc::clone(&self.inner.runtime).run(input, ctx);
        CatchUnwind::new(run).await.map_err(Defect::Panicked)
    }
}

/// Checks a JSON value against a schema known only at run time; `Err` carries the reason
/// the model is shown after `Invalid tool input: ` (or, for outputs, after the encode
/// failure prefix).
type Validator = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

type SchemaExecute = Box<dyn Fn(Value, Context) -> BoxFuture<'static, Result<ToolOutput, ToolFailure>> + Send + Sync>;

/// The executor of a tool described by a raw JSON Schema (see [`Tool::from_schema`]).
struct Schemaless {
    validate_input: Validator,
    validate_output: Option<Validator>,
    execute: SchemaExecute,
}

impl Runtime for Schemaless {
    fn run(self: Arc<Self>, input: Value, ctx: Context) -> BoxFuture<'static, Outcome> {
        Box::pin(async move {
            // 1. decode: the validator stands in for deserialisation; nothing runs on failure.
            (self.validate_input)(&input).map_err(|error| ToolFailure::new(format!("Invalid tool input: {error}")))?;
            // 2. execute.
            let output = (self.execute)(input, ctx).await?;
            // 3. encode: the structured value must fit the declared output schema.
            if let Some(validate) = &self.validate_output {
                validate(&output.structured).map_err(|error| {
                    ToolFailure::new(format!("Tool returned an invalid value for its output schema: {error}"))
                })?;
            }
            // 4. project: the executor already produced the model content.
            Ok(output)
        })
    }
}

/// Configures a [`Tool`] described by a raw JSON Schema; see [`Tool::from_schema`].
pub struct SchemaToolBuilder {
    description: String,
    title: Option<String>,
    annotations: Annotations,
    input_schema: Value,
    output_schema: Value,
    validate_input: Validator,
    validate_output: Option<Validator>,
    execute: SchemaExecute,
}

impl SchemaToolBuilder {
    /// Declares the output schema and the validator every successful structured output
    /// must pass (the encode step). Without it the output schema is `{}` and any value
    /// is accepted.
    pub fn output_schema(
        mut self,
        schema: Value,
        validate: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.output_schema = schema;
        self.validate_output = Some(Arc::new(validate));
        self
    }

    /// Sets the title people see (see [`ModelDefinition::title`]).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets what the tool says about its effects (see [`Annotations`]).
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Builds the handle.
    pub fn build(self) -> Tool {
        Tool {
            inner: Arc::new(Inner {
                description: Arc::from(self.description),
                title: self.title.map(Arc::from),
                annotations: self.annotations,
                // Known already: set now, never generated.
                schemas: OnceLock::from((Arc::new(self.input_schema), Arc::new(self.output_schema))),
                make_schemas: || (Arc::new(Value::Null), Arc::new(Value::Null)),
                runtime: Arc::new(Schemaless {
                    validate_input: self.validate_input,
                    validate_output: self.validate_output,
                    execute: self.execute,
                }),
            }),
            permission: None,
        }
    }
}

/// Configures a [`Tool`]; see [`Tool::builder`].
pub struct ToolBuilder<I, O, F> {
    description: String,
    title: Option<String>,
    annotations: Annotations,
    execute: F,
    project: Option<Projection<O>>,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O, F, Fut> ToolBuilder<I, O, F>
where
    I: DeserializeOwned + JsonSchema + Send + 'static,
    O: Serialize + JsonSchema + Send + 'static,
    F: Fn(I, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolFailure>> + Send + 'static,
{
    /// Sets how an output becomes model content. Without it, a string output is one text
    /// part and any other output gives no content (the model then sees the JSON).
    pub fn project(mut self, project: impl Fn(&O) -> Vec<Content> + Send + Sync + 'static) -> Self {
        self.project = Some(Box::new(project));
        self
    }

    /// Sets the title people see (see [`ModelDefinition::title`]).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets what the tool says about its effects (see [`Annotations`]).
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Builds the handle. The schemas are generated once, when a definition is first
    /// asked for: building a tool costs no schema work.
    pub fn build(self) -> Tool {
        let runtime: Arc<dyn Runtime> = Arc::new(Typed::<I, O, F> {
            execute: self.execute,
            project: self.project,
            _types: PhantomData,
        });
        Tool {
            inner: Arc::new(Inner {
                description: Arc::from(self.description),
                title: self.title.map(Arc::from),
                annotations: self.annotations,
                schemas: OnceLock::new(),
                make_schemas: || (Arc::new(schema_for::<I>()), Arc::new(schema_for::<O>())),
                runtime,
            }),
            permission: None,
        }
    }
}
