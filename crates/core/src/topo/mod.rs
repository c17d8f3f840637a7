//! Topology and clocks: node identity, timestamps and clock-offset estimation.

pub mod clock;
pub mod placement;

/// The node name: `override_name` if given, else the host name.
pub fn node_name(override_name: Option<&str>) -> String {
    if let Some(n) = override_name {
        return n.to_string();
    }
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into our buffer.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn override_wins_and_hostname_is_not_empty() {
        assert_eq!(super::node_name(Some("n42")), "n42");
        assert!(!super::node_name(None).is_empty());
    }
}
