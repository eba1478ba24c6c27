//! How many leading words name a command (spec §7.4): `git checkout main` → `git checkout`.
//!
//! The table is data, exactly as OpenCode's; an "always" answer saves the prefix + ` *`.

use std::sync::OnceLock;

/// Every entry of the arity table: the command words and how many words name the command.
#[rustfmt::skip]
pub(crate) const ARITY: &[(&str, usize)] = &[
    // Arity 1.
    ("cat", 1), ("cd", 1), ("chmod", 1), ("chown", 1), ("cp", 1), ("echo", 1), ("env", 1), ("export", 1),
    ("grep", 1), ("ionice", 1), ("kill", 1), ("killall", 1), ("ln", 1), ("ls", 1), ("mkdir", 1), ("mv", 1),
    ("nice", 1), ("nohup", 1), ("ps", 1), ("pwd", 1), ("rm", 1), ("rmdir", 1), ("sleep", 1), ("source", 1),
    ("stdbuf", 1), ("sudo", 1), ("tail", 1), ("time", 1), ("timeout", 1), ("touch", 1), ("unset", 1),
    ("watch", 1), ("which", 1), ("xargs", 1),
    // Arity 2.
    ("bazel", 2), ("brew", 2), ("bun", 2), ("cargo", 2), ("cdk", 2), ("cf", 2), ("cmake", 2), ("composer", 2),
    ("consul", 2), ("crictl", 2), ("deno", 2), ("docker", 2), ("eksctl", 2), ("firebase", 2), ("flyctl", 2),
    ("git", 2), ("go", 2), ("gradle", 2), ("helm", 2), ("heroku", 2), ("hugo", 2), ("ip", 2), ("kind", 2),
    ("kubectl", 2), ("kustomize", 2), ("make", 2), ("mc", 2), ("minikube", 2), ("mongosh", 2), ("mysql", 2),
    ("mvn", 2), ("ng", 2), ("npm", 2), ("nvm", 2), ("nx", 2), ("openssl", 2), ("pip", 2), ("pipenv", 2),
    ("pnpm", 2), ("poetry", 2), ("podman", 2), ("psql", 2), ("pulumi", 2), ("pyenv", 2), ("python", 2),
    ("rake", 2), ("rbenv", 2), ("redis-cli", 2), ("rustup", 2), ("serverless", 2), ("skaffold", 2), ("sls", 2),
    ("sst", 2), ("swift", 2), ("systemctl", 2), ("terraform", 2), ("tmux", 2), ("turbo", 2), ("ufw", 2),
    ("vault", 2), ("vercel", 2), ("volta", 2), ("wp", 2), ("yarn", 2),
    // Arity 3.
    ("aws", 3), ("az", 3), ("doctl", 3), ("gcloud", 3), ("gh", 3), ("sfdx", 3),
    ("bun run", 3), ("bun x", 3), ("cargo add", 3), ("cargo run", 3), ("consul kv", 3), ("deno task", 3),
    ("docker builder", 3), ("docker compose", 3), ("docker container", 3), ("docker image", 3),
    ("docker network", 3), ("docker volume", 3), ("eksctl create", 3), ("git config", 3), ("git remote", 3),
    ("git stash", 3), ("ip addr", 3), ("ip link", 3), ("ip netns", 3), ("ip route", 3), ("kind create", 3),
    ("kubectl kustomize", 3), ("kubectl rollout", 3), ("mc admin", 3), ("npm exec", 3), ("npm init", 3),
    ("npm run", 3), ("npm view", 3), ("openssl req", 3), ("openssl x509", 3), ("pnpm dlx", 3),
    ("pnpm exec", 3), ("pnpm run", 3), ("podman container", 3), ("podman image", 3), ("pulumi stack", 3),
    ("terraform workspace", 3), ("vault auth", 3), ("vault kv", 3), ("yarn dlx", 3), ("yarn run", 3),
];

/// The table sorted by key for a binary search (looked up for every command a line runs);
/// how many words its longest key has (no longer run of tokens can match); and how many
/// leading tokens can matter at all (the longest key or the largest arity).
struct Table {
    sorted: Vec<(&'static str, usize)>,
    longest: usize,
    reach: usize,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut sorted: Vec<(&'static str, usize)> = ARITY.to_vec();
        // Stable: of two entries with one key, the first stays first and is kept, as a
        // scan of the table would find it.
        sorted.sort_by_key(|(key, _)| *key);
        sorted.dedup_by_key(|(key, _)| *key);
        let longest = ARITY.iter().map(|(key, _)| key.split(' ').count()).max().unwrap_or(1);
        let reach = ARITY.iter().map(|(_, n)| *n).max().unwrap_or(1).max(longest);
        Table { sorted, longest, reach }
    })
}

fn lookup(key: &str) -> Option<usize> {
    let sorted = &table().sorted;
    sorted
        .binary_search_by(|(candidate, _)| (*candidate).cmp(key))
        .ok()
        .and_then(|index| sorted.get(index))
        .map(|(_, n)| *n)
}

/// How many leading tokens [`prefix`] can look at: the tokens after them never change it.
pub(crate) fn reach() -> usize {
    table().reach
}

fn arity(words: &[&str]) -> Option<usize> {
    match words {
        [one] => lookup(one),
        _ => lookup(&words.join(" ")),
    }
}

/// The words that name the command (`BashArity.prefix`): the longest table key that starts
/// the tokens decides how many tokens to keep; no key → the first token.
pub(crate) fn prefix<S: AsRef<str>>(tokens: &[S]) -> Vec<&str> {
    let words: Vec<&str> = tokens.iter().map(AsRef::as_ref).collect();
    for len in (1..=words.len().min(table().longest)).rev() {
        if let Some(n) = arity(&words[..len]) {
            return words[..n.min(words.len())].to_vec();
        }
    }
    words.into_iter().take(1).collect()
}

/// The "always" pattern of a command: its prefix + ` *`.
#[cfg(test)]
pub(crate) fn save_pattern<S: AsRef<str>>(tokens: &[S]) -> String {
    format!("{} *", prefix(tokens).join(" "))
}

#[cfg(test)]
mod tests {
    use super::{prefix, save_pattern};

    /// The arity vectors of spec §9.9 (here, not in `tests/`: the table is crate-private).
    #[test]
    fn b1_to_b11_arity() {
        let p = |tokens: &[&str]| prefix(tokens).join(" ");
        assert_eq!(p(&["unknown", "command", "subcommand"]), "unknown", "B1");
        assert_eq!(p(&["touch", "foo.txt"]), "touch", "B2");
        assert_eq!(p(&["git", "checkout", "main"]), "git checkout", "B3");
        assert_eq!(p(&["docker", "run", "nginx"]), "docker run", "B4");
        assert_eq!(p(&["aws", "s3", "ls", "my-bucket"]), "aws s3 ls", "B5");
        assert_eq!(p(&["npm", "run", "dev", "script"]), "npm run dev", "B6");
        assert_eq!(p(&["docker", "compose", "up", "service"]), "docker compose up", "B7");
        assert_eq!(p(&["consul", "kv", "get", "config"]), "consul kv get", "B8");
        assert_eq!(p(&["git", "checkout"]), "git checkout", "B9");
        assert_eq!(p(&["npm", "run", "dev"]), "npm run dev", "B9");
        assert_eq!(p(&[]), "", "B10");
        assert_eq!(p(&["single"]), "single", "B10");
        assert_eq!(p(&["git"]), "git", "B10");
        assert_eq!(save_pattern(&["npm", "run", "dev", "--watch"]), "npm run dev *", "B11");
        assert_eq!(p(&["git", "-C", "x", "status"]), "git -C", "flags are not skipped");
    }
}
