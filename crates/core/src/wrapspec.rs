//! Parser for `wrappers/*.wrap`, the declarative list of wrapped MPI calls.
//!
//! One call per line: its C prototype, `=>`, a kind, and the arguments that play each
//! role of that kind:
//!
//! ```text
//! MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) => send count=count dtype=datatype peer=dest tag=tag comm=comm
//! ```
//!
//! The kind names the hook that records the call (`src/interpose/hook.rs`) and fixes
//! which roles it needs, in which order. `#` starts a comment. `build.rs` includes this
//! file with `#[path]`, so it uses only `std`.

use std::collections::BTreeMap;

/// Roles each kind needs, in the order its hook takes them. A role ending in `?` may be
/// left out: its hook then gets a null pointer (a collective's `request?`: given for the
/// nonblocking variant, `MPI_Ibcast`, absent for the blocking one).
pub const KINDS: &[(&str, &[&str])] = &[
    ("special", &[]),
    ("send", &["count", "dtype", "peer", "tag", "comm"]),
    ("recv", &["count", "dtype", "peer", "tag", "comm", "status"]),
    (
        "isend",
        &["count", "dtype", "peer", "tag", "comm", "request"],
    ),
    (
        "irecv",
        &["count", "dtype", "peer", "tag", "comm", "request"],
    ),
    (
        "sendrecv",
        &[
            "scount", "stype", "peer", "tag", "rcount", "rtype", "source", "rtag", "comm", "status",
        ],
    ),
    ("probe", &["peer", "tag", "comm", "status"]),
    ("iprobe", &["peer", "tag", "comm", "flag", "status"]),
    ("wait", &["request", "status"]),
    ("waitall", &["incount", "requests", "statuses"]),
    ("waitany", &["incount", "requests", "index", "status"]),
    (
        "waitsome",
        &["incount", "requests", "outcount", "indices", "statuses"],
    ),
    ("test", &["request", "flag", "status"]),
    ("testall", &["incount", "requests", "flag", "statuses"]),
    (
        "testany",
        &["incount", "requests", "index", "flag", "status"],
    ),
    (
        "testsome",
        &["incount", "requests", "outcount", "indices", "statuses"],
    ),
    ("request_free", &["request"]),
    (
        "alltoall",
        &[
            "sbuf", "scount", "stype", "rcount", "rtype", "comm", "request?",
        ],
    ),
    (
        "alltoallv",
        &[
            "sbuf", "scounts", "stype", "rcounts", "rtype", "comm", "request?",
        ],
    ),
    (
        "alltoallw",
        &[
            "sbuf", "scounts", "stypes", "rcounts", "rtypes", "comm", "request?",
        ],
    ),
    (
        "allgather",
        &[
            "sbuf", "scount", "stype", "rcount", "rtype", "comm", "request?",
        ],
    ),
    (
        "allgatherv",
        &[
            "sbuf", "scount", "stype", "rcounts", "rtype", "comm", "request?",
        ],
    ),
    (
        "gather",
        &[
            "sbuf", "scount", "stype", "rcount", "rtype", "root", "comm", "request?",
        ],
    ),
    (
        "gatherv",
        &[
            "sbuf", "scount", "stype", "rcounts", "rtype", "root", "comm", "request?",
        ],
    ),
    (
        "scatter",
        &[
            "rbuf", "scount", "stype", "rcount", "rtype", "root", "comm", "request?",
        ],
    ),
    (
        "scatterv",
        &[
            "rbuf", "scounts", "stype", "rcount", "rtype", "root", "comm", "request?",
        ],
    ),
    ("bcast", &["count", "dtype", "root", "comm", "request?"]),
    (
        "reduce",
        &["sbuf", "count", "dtype", "root", "comm", "request?"],
    ),
    ("allreduce", &["sbuf", "count", "dtype", "comm", "request?"]),
    (
        "reduce_scatter",
        &["sbuf", "rcounts", "dtype", "comm", "request?"],
    ),
    (
        "reduce_scatter_block",
        &["sbuf", "rcount", "dtype", "comm", "request?"],
    ),
    ("scan", &["sbuf", "count", "dtype", "comm", "request?"]),
    ("barrier", &["comm", "request?"]),
    (
        "neighbor_allgather",
        &[
            "sbuf", "scount", "stype", "rcount", "rtype", "comm", "request?",
        ],
    ),
    (
        "neighbor_allgatherv",
        &[
            "sbuf", "scount", "stype", "rcounts", "rtype", "comm", "request?",
        ],
    ),
    (
        "neighbor_alltoall",
        &[
            "sbuf", "scount", "stype", "rcount", "rtype", "comm", "request?",
        ],
    ),
    (
        "neighbor_alltoallv",
        &[
            "sbuf", "scounts", "stype", "rcounts", "rtype", "comm", "request?",
        ],
    ),
    (
        "neighbor_alltoallw",
        &[
            "sbuf", "scounts", "stypes", "rcounts", "rtypes", "comm", "request?",
        ],
    ),
    (
        "send_init",
        &["count", "dtype", "peer", "tag", "comm", "request"],
    ),
    (
        "recv_init",
        &["count", "dtype", "peer", "tag", "comm", "request"],
    ),
    ("start", &["request"]),
    ("startall", &["incount", "requests"]),
    ("mprobe", &["peer", "tag", "comm", "message", "status"]),
    (
        "improbe",
        &["peer", "tag", "comm", "flag", "message", "status"],
    ),
    ("mrecv", &["count", "dtype", "message", "status"]),
    ("imrecv", &["count", "dtype", "message", "request"]),
    ("rma_put", &["count", "dtype", "peer", "win"]),
    ("rma_get", &["count", "dtype", "peer", "win"]),
    (
        "rma_get_acc",
        &["count", "dtype", "rcount", "rtype", "peer", "win"],
    ),
    ("win_fence", &["win"]),
    ("win_open", &["win"]),
    ("win_open_rank", &["peer", "win"]),
    ("win_done", &["win"]),
    ("win_done_rank", &["peer", "win"]),
    ("win_new", &["comm", "newwin"]),
    ("win_free", &["winp"]),
    ("comm_new", &["comm", "newcomm"]),
    ("comm_free", &["commp"]),
];

/// One C parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The C type as written, e.g. `const int *` or `MPI_Request []`.
    pub c_type: String,
    pub name: String,
}

/// One wrapped call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrap {
    pub name: String,
    pub params: Vec<Param>,
    pub kind: String,
    /// Role name → parameter name.
    pub roles: BTreeMap<String, String>,
    /// 1-based line in its file, for messages.
    pub line: usize,
}

impl Wrap {
    /// Parameter names in the order the kind's hook takes them.
    pub fn role_args(&self) -> Vec<&str> {
        let roles = KINDS
            .iter()
            .find(|(k, _)| *k == self.kind)
            .map(|(_, r)| *r)
            .unwrap_or(&[]);
        roles
            .iter()
            .map(|r| match r.strip_suffix('?') {
                Some(opt) => self
                    .roles
                    .get(opt)
                    .map_or("::std::ptr::null_mut()", String::as_str),
                None => self.roles[*r].as_str(),
            })
            .collect()
    }
}

/// Maps a C parameter type to the Rust type of the `mpi-sys` bindings; `ffi` is the path
/// of the bindings module in the generated code.
pub fn rust_type(c_type: &str, ffi: &str) -> Result<String, String> {
    let t = c_type.trim();
    let is_const = t.starts_with("const ");
    let t = t.trim_start_matches("const ").trim();
    let ptrs = t.matches('*').count() + t.matches("[]").count();
    let base = t.replace(['*'], "").replace("[]", "");
    let base = base.trim();
    let base_rs = match base {
        "void" => "::std::ffi::c_void".to_string(),
        "int" => "::std::ffi::c_int".to_string(),
        "char" => "::std::ffi::c_char".to_string(),
        b if b.starts_with("MPI_") && b.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
            format!("{ffi}::{b}")
        }
        other => return Err(format!("unsupported C type `{other}`")),
    };
    let mut out = base_rs;
    for i in 0..ptrs {
        // `const` binds to the innermost pointee as written in MPI prototypes.
        let q = if is_const && i == 0 {
            "*const "
        } else {
            "*mut "
        };
        out = format!("{q}{out}");
    }
    Ok(out)
}

/// Parses one `.wrap` file.
pub fn parse(text: &str) -> Result<Vec<Wrap>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.split('#').next().unwrap_or("").trim();
        if l.is_empty() {
            continue;
        }
        out.push(parse_line(l, line).map_err(|e| format!("line {line}: {e}"))?);
    }
    Ok(out)
}

/// Every call of the `*.wrap` files in `dir`, numbered as the call table numbers them:
/// `lifecycle.wrap` first, so that the numbers of the core calls stay small and stable,
/// then the other files by name. A call listed twice is an error.
pub fn load_dir(dir: &std::path::Path) -> Result<Vec<Wrap>, String> {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "wrap"))
        .collect();
    files.sort_by_key(|p| (!p.ends_with("lifecycle.wrap"), p.clone()));
    let mut wraps = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        wraps.extend(parse(&text).map_err(|e| format!("{}: {e}", f.display()))?);
    }
    let mut seen = std::collections::HashSet::new();
    for w in &wraps {
        if !seen.insert(w.name.as_str()) {
            return Err(format!("{} is listed twice in {}", w.name, dir.display()));
        }
    }
    Ok(wraps)
}

/// The call table (`CALL_NAMES`, `CALL_KINDS`, `call::MPI_x` numbers) as Rust source,
/// included by the core's `trace` module.
pub fn calls_rs(wraps: &[Wrap]) -> String {
    use std::fmt::Write as _;
    let mut s = String::from("// DO NOT EDIT -- generated by build.rs from wrappers/*.wrap\n");
    s += "/// Names of all wrapped calls, indexed by call number.\n";
    s += "pub const CALL_NAMES: &[&str] = &[\n";
    for w in wraps {
        let _ = writeln!(s, "    {:?},", w.name);
    }
    s += "];\n/// Kind of each call (see `wrapspec::KINDS`), indexed by call number.\n";
    s += "pub const CALL_KINDS: &[&str] = &[\n";
    for w in wraps {
        let _ = writeln!(s, "    {:?},", w.kind);
    }
    s += "];\n/// Call numbers by name.\n#[allow(non_upper_case_globals)]\npub mod call {\n";
    for (i, w) in wraps.iter().enumerate() {
        let _ = writeln!(s, "    pub const {}: u16 = {i};", w.name);
    }
    s += "}\n";
    s
}

fn parse_line(l: &str, line: usize) -> Result<Wrap, String> {
    let (proto, rest) = l
        .split_once("=>")
        .ok_or("missing `=>` between prototype and kind")?;
    let proto = proto.trim();
    let open = proto.find('(').ok_or("missing `(` in prototype")?;
    if !proto.ends_with(')') {
        return Err("prototype must end with `)`".into());
    }
    let name = proto[..open].trim().to_string();
    if !name.starts_with("MPI_") || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("`{name}` is not an MPI function name"));
    }
    let mut params = Vec::new();
    let inner = proto[open + 1..proto.len() - 1].trim();
    if !inner.is_empty() && inner != "void" {
        for p in inner.split(',') {
            let p = p.trim();
            // The name is the last identifier; array brackets after it belong to the type.
            let (decl, arr) = match p.strip_suffix("[]") {
                Some(d) => (d.trim_end(), " []"),
                None => (p, ""),
            };
            // End of the type: just after the last character that cannot be in a name
            // (which may be several bytes long in UTF-8).
            let split = decl
                .char_indices()
                .rev()
                .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_'))
                .map(|(i, c)| i + c.len_utf8())
                .ok_or_else(|| format!("parameter `{p}` has no type"))?;
            let pname = decl[split..].to_string();
            let ptype = format!("{}{}", decl[..split].trim(), arr);
            if pname.is_empty() || ptype.trim().is_empty() {
                return Err(format!("cannot split `{p}` into type and name"));
            }
            rust_type(&ptype, "ffi").map_err(|e| format!("parameter `{pname}`: {e}"))?;
            params.push(Param {
                c_type: ptype,
                name: pname,
            });
        }
    }
    let mut words = rest.split_whitespace();
    let kind = words.next().ok_or("missing kind after `=>`")?.to_string();
    let needed = KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, r)| *r)
        .ok_or_else(|| format!("unknown kind `{kind}`"))?;
    let mut roles = BTreeMap::new();
    for w in words {
        let (role, arg) = w
            .split_once('=')
            .ok_or_else(|| format!("`{w}` is not role=argument"))?;
        if !needed.iter().any(|r| r.trim_end_matches('?') == role) {
            return Err(format!("kind `{kind}` has no role `{role}`"));
        }
        if !params.iter().any(|p| p.name == arg) {
            return Err(format!(
                "role `{role}` names `{arg}`, which is not a parameter"
            ));
        }
        if roles.insert(role.to_string(), arg.to_string()).is_some() {
            return Err(format!("role `{role}` given twice"));
        }
    }
    if let Some(missing) = needed
        .iter()
        .find(|r| !r.ends_with('?') && !roles.contains_key(**r))
    {
        return Err(format!("kind `{kind}` needs role `{missing}`"));
    }
    Ok(Wrap {
        name,
        params,
        kind,
        roles,
        line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_send_line() {
        let w = parse(
            "# c\nMPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) => send count=count dtype=datatype peer=dest tag=tag comm=comm\n",
        )
        .unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].name, "MPI_Send");
        assert_eq!(w[0].line, 2);
        assert_eq!(w[0].params.len(), 6);
        assert_eq!(w[0].params[0].c_type, "const void *");
        assert_eq!(
            w[0].role_args(),
            vec!["count", "datatype", "dest", "tag", "comm"]
        );
    }

    #[test]
    fn array_params_and_types() {
        let w = parse("MPI_Waitall(int count, MPI_Request requests[], MPI_Status *st) => waitall incount=count requests=requests statuses=st").unwrap();
        assert_eq!(w[0].params[1].c_type, "MPI_Request []");
        assert_eq!(
            rust_type("MPI_Request []", "ffi").unwrap(),
            "*mut ffi::MPI_Request"
        );
        assert_eq!(
            rust_type("const int []", "ffi").unwrap(),
            "*const ::std::ffi::c_int"
        );
        assert_eq!(
            rust_type("const void *", "f").unwrap(),
            "*const ::std::ffi::c_void"
        );
        assert!(rust_type("long double", "f").is_err());
    }

    #[test]
    fn an_optional_request_role_is_null_when_left_out() {
        let w = parse(
            "MPI_Barrier(MPI_Comm comm) => barrier comm=comm\nMPI_Ibarrier(MPI_Comm comm, MPI_Request *request) => barrier comm=comm request=request",
        )
        .unwrap();
        assert_eq!(w[0].role_args(), vec!["comm", "::std::ptr::null_mut()"]);
        assert_eq!(w[1].role_args(), vec!["comm", "request"]);
        let e =
            parse("MPI_Ibarrier(MPI_Comm comm, MPI_Request *r) => barrier comm=comm request?=r")
                .unwrap_err();
        assert!(e.contains("has no role `request?`"), "{e}");
    }

    #[test]
    fn errors_name_the_line_and_problem() {
        let e = parse("\nMPI_Barrier(MPI_Comm comm) => barrier").unwrap_err();
        assert_eq!(e, "line 2: kind `barrier` needs role `comm`");
        let e = parse("MPI_Barrier(MPI_Comm comm) => nope comm=comm").unwrap_err();
        assert!(e.contains("unknown kind `nope`"), "{e}");
        let e = parse("MPI_Barrier(MPI_Comm comm) => barrier comm=c").unwrap_err();
        assert!(e.contains("not a parameter"), "{e}");
        let e = parse("MPI_Barrier(MPI_Comm comm) barrier").unwrap_err();
        assert!(e.contains("=>"), "{e}");
    }

    /// Found by fuzz/fuzz_targets/wrapspec.rs: a multi-byte character before the
    /// parameter name was split inside its UTF-8 encoding (a slicing panic).
    #[test]
    fn non_ascii_before_a_parameter_name() {
        let e = parse("MPI_Send(int\u{78b}tag) => special").unwrap_err();
        assert!(e.contains("unsupported C type `int\u{78b}`"), "{e}");
        let e = parse("MPI_Send(é) => special").unwrap_err();
        assert!(e.contains("cannot split"), "{e}");
        // Unicode white space separates type and name like a space (as `trim` does).
        let w = parse("MPI_Send(MPI_Comm\u{a0}comm) => special").unwrap();
        assert_eq!(w[0].params[0].c_type, "MPI_Comm");
        assert_eq!(w[0].params[0].name, "comm");
    }
}
