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
//! which roles it needs, in which order. An `int` role may be given as a number where the
//! prototype has no parameter for it (`count=1`). `#` starts a comment. `build.rs` includes this
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

/// The C type of each role's argument: the field type of the kind's argument struct in
/// the generated code. A role's parameter must have this type (as `rust_type` maps it).
pub const ROLE_TYPES: &[(&str, &str)] = &[
    ("count", "int"),
    ("scount", "int"),
    ("rcount", "int"),
    ("incount", "int"),
    ("peer", "int"),
    ("source", "int"),
    ("root", "int"),
    ("tag", "int"),
    ("rtag", "int"),
    ("dtype", "MPI_Datatype"),
    ("stype", "MPI_Datatype"),
    ("rtype", "MPI_Datatype"),
    ("comm", "MPI_Comm"),
    ("win", "MPI_Win"),
    ("sbuf", "const void *"),
    ("rbuf", "void *"),
    ("scounts", "const int []"),
    ("rcounts", "const int []"),
    ("stypes", "const MPI_Datatype []"),
    ("rtypes", "const MPI_Datatype []"),
    ("status", "MPI_Status *"),
    ("statuses", "MPI_Status []"),
    ("request", "MPI_Request *"),
    ("requests", "MPI_Request []"),
    ("flag", "int *"),
    ("index", "int *"),
    ("outcount", "int *"),
    ("indices", "int []"),
    ("message", "MPI_Message *"),
    ("newcomm", "MPI_Comm *"),
    ("commp", "MPI_Comm *"),
    ("newwin", "MPI_Win *"),
    ("winp", "MPI_Win *"),
];

/// The C type of a role's argument (see [`ROLE_TYPES`]); a trailing `?` is ignored.
pub fn role_type(role: &str) -> Option<&'static str> {
    let role = role.trim_end_matches('?');
    ROLE_TYPES.iter().find(|(r, _)| *r == role).map(|(_, t)| *t)
}

/// Name of the generated struct that holds a kind's arguments: `alltoallv` → `Alltoallv`,
/// `rma_get_acc` → `RmaGetAcc`.
pub fn kind_struct(kind: &str) -> String {
    kind.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

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

/// The roles of a kind, in the order its argument struct lists them (none if unknown).
pub fn kind_roles(kind: &str) -> &'static [&'static str] {
    KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(&[], |(_, r)| *r)
}

impl Wrap {
    /// Parameter names in the order of the kind's roles (a null pointer for an optional
    /// role left out).
    pub fn role_args(&self) -> Vec<&str> {
        self.role_fields().into_iter().map(|(_, a)| a).collect()
    }

    /// The fields of the kind's argument struct with the expression each is set to: the
    /// parameter that plays the role, or a null pointer for an optional role left out.
    pub fn role_fields(&self) -> Vec<(&'static str, &str)> {
        kind_roles(&self.kind)
            .iter()
            .map(|r| {
                let field = r.trim_end_matches('?');
                let arg = self
                    .roles
                    .get(field)
                    .map_or("::std::ptr::null_mut()", String::as_str);
                (field, arg)
            })
            .collect()
    }

    /// The role a parameter plays, if any (the first, for a parameter in two roles).
    pub fn role_of(&self, param: &str) -> Option<&'static str> {
        kind_roles(&self.kind)
            .iter()
            .map(|r| r.trim_end_matches('?'))
            .find(|r| self.roles.get(*r).is_some_and(|a| a == param))
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
    s += "];\n";
    s += &call_kind_rs();
    s += "/// Kind of each call (see `wrapspec::KINDS`), indexed by call number.\n";
    s += "pub const CALL_KINDS: &[CallKind] = &[\n";
    for w in wraps {
        let _ = writeln!(s, "    CallKind::{},", camel(&w.kind));
    }
    s += "];\n/// Call numbers by name.\n#[allow(non_upper_case_globals)]\npub mod call {\n";
    for (i, w) in wraps.iter().enumerate() {
        let _ = writeln!(s, "    pub const {}: u16 = {i};", w.name);
    }
    s += "}\n";
    s
}

/// `reduce_scatter_block` → `ReduceScatterBlock`.
fn camel(kind: &str) -> String {
    kind.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next().map_or(String::new(), |f| {
                f.to_ascii_uppercase().to_string() + c.as_str()
            })
        })
        .collect()
}

/// The `CallKind` enum, one variant per kind of [`KINDS`] and `Unknown` (a call number no
/// table knows), with its name in both directions.
fn call_kind_rs() -> String {
    use std::fmt::Write as _;
    let mut s = String::from(
        "/// What a call does (its kind in `wrappers/`): decides how it is recorded, drawn\n\
         /// in the graph and replayed.\n\
         #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]\n\
         pub enum CallKind {\n",
    );
    for (k, _) in KINDS {
        let _ = writeln!(s, "    /// `{k}`\n    {},", camel(k));
    }
    s += "    /// A call number outside the call table.\n    Unknown,\n}\n";
    s += "impl CallKind {\n    /// Every kind but `Unknown`, in `wrapspec::KINDS` order.\n";
    s += "    pub const ALL: &[CallKind] = &[\n";
    for (k, _) in KINDS {
        let _ = writeln!(s, "        CallKind::{},", camel(k));
    }
    s += "    ];\n    /// The kind's name in `wrappers/` (`?` for `Unknown`).\n";
    s += "    pub fn as_str(self) -> &'static str {\n        match self {\n";
    for (k, _) in KINDS {
        let _ = writeln!(s, "            CallKind::{} => {k:?},", camel(k));
    }
    s += "            CallKind::Unknown => \"?\",\n        }\n    }\n}\n";
    s += "impl std::fmt::Display for CallKind {\n    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {\n        f.write_str(self.as_str())\n    }\n}\n";
    s += "impl std::str::FromStr for CallKind {\n    type Err = String;\n    fn from_str(s: &str) -> Result<Self, String> {\n        CallKind::ALL.iter().copied().find(|k| k.as_str() == s).ok_or_else(|| format!(\"unknown call kind '{s}'\"))\n    }\n}\n";
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
        let want = role_type(role).ok_or_else(|| format!("role `{role}` has no type"))?;
        let literal = !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_digit());
        let literal = literal && want == "int" && arg.len() <= 9;
        if !literal && !params.iter().any(|p| p.name == arg) {
            return Err(format!(
                "role `{role}` names `{arg}`, which is not a parameter"
            ));
        }
        let param = params
            .iter()
            .find(|p| p.name == arg)
            .map(|p| p.c_type.as_str());
        if !literal && param.map(|t| rust_type(t, "ffi")) != Some(rust_type(want, "ffi")) {
            return Err(format!(
                "role `{role}` takes a `{want}`, but `{arg}` is a `{}`",
                param.unwrap_or("?")
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

    #[test]
    fn every_role_has_a_type_and_every_kind_a_struct_name() {
        for (kind, roles) in KINDS {
            for r in *roles {
                let t = role_type(r).unwrap_or_else(|| panic!("role `{r}` of `{kind}`"));
                assert!(rust_type(t, "ffi").is_ok(), "{t}");
            }
        }
        assert_eq!(kind_struct("send"), "Send");
        assert_eq!(kind_struct("rma_get_acc"), "RmaGetAcc");
    }

    #[test]
    fn a_role_takes_only_its_type() {
        let e = parse("MPI_Send(const void *buf, MPI_Comm count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) => send count=count dtype=datatype peer=dest tag=tag comm=comm").unwrap_err();
        assert_eq!(
            e,
            "line 1: role `count` takes a `int`, but `count` is a `MPI_Comm`"
        );
        // Arrays and pointers are the same to C.
        let w = parse("MPI_Waitall(int n, MPI_Request *r, MPI_Status *st) => waitall incount=n requests=r statuses=st").unwrap();
        assert_eq!(w[0].role_of("r"), Some("requests"));
        assert_eq!(w[0].role_of("n"), Some("incount"));
    }

    #[test]
    fn a_parameter_in_two_roles_fills_both_fields() {
        let w = parse("MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Status *status) => sendrecv scount=count stype=datatype peer=dest tag=sendtag rcount=count rtype=datatype source=source rtag=recvtag comm=comm status=status").unwrap();
        let f = w[0].role_fields();
        assert_eq!(f[0], ("scount", "count"));
        assert_eq!(f[4], ("rcount", "count"));
        assert_eq!(w[0].role_of("count"), Some("scount"));
        assert_eq!(w[0].role_of("buf"), None);
    }

    #[test]
    fn an_int_role_may_be_a_number() {
        let w = parse("MPI_Fetch_and_op(const void *o, void *r, MPI_Datatype dt, int target, MPI_Aint disp, MPI_Op op, MPI_Win win) => rma_get_acc count=1 dtype=dt rcount=1 rtype=dt peer=target win=win").unwrap();
        assert_eq!(w[0].role_fields()[0], ("count", "1"));
        assert_eq!(w[0].role_of("dt"), Some("dtype"));
        let e = parse("MPI_Win_fence(int a, MPI_Win win) => win_fence win=1").unwrap_err();
        assert!(e.contains("names `1`, which is not a parameter"), "{e}");
    }
}
