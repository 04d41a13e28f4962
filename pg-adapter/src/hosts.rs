//! A host list: the servers a pool may find its primary among (`database.hosts`,
//! `--database-hosts`), each `host:port` (`[address]:port` for an IPv6 address; the port may be
//! left out for 5432). The URL still gives the user, the password, the database and the other
//! parameters; each host only replaces its host and port.

use sqlx::postgres::PgConnectOptions;
use std::fmt;

/// The port a host without one gets.
pub const DEFAULT_PORT: u16 = 5432;

/// One server of a host list.
#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct Host {
    /// A name or an address (an IPv6 address without its brackets).
    pub host: String,
    /// The TCP port.
    pub port: u16,
}

/// A host-list entry that cannot be used: the entry and why.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("'{entry}' is not host:port ({reason})")]
pub struct InvalidHost {
    /// The entry as given (a host and a port: no secret).
    pub entry: String,
    /// What is wrong.
    pub reason: &'static str,
}

impl Host {
    /// Parses `host:port`, `host`, `[v6]:port` or `[v6]`.
    pub fn parse(entry: &str) -> Result<Host, InvalidHost> {
        let invalid = |reason| InvalidHost {
            entry: entry.to_owned(),
            reason,
        };
        let text = entry.trim();
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (v6, after) = rest.split_once(']').ok_or(invalid("no closing ']'"))?;
            match after {
                "" => (v6, None),
                _ => (
                    v6,
                    Some(after.strip_prefix(':').ok_or(invalid("':' expected"))?),
                ),
            }
        } else if text.matches(':').count() > 1 {
            return Err(invalid("an IPv6 address goes in brackets: [address]:port"));
        } else {
            match text.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (text, None),
            }
        };
        if host.is_empty()
            || host
                .chars()
                .any(|c| c.is_whitespace() || c == '/' || c == '@')
        {
            return Err(invalid("no host name or address"));
        }
        let port = match port {
            None => DEFAULT_PORT,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or(invalid("the port must be a number from 1 to 65535"))?,
        };
        Ok(Host {
            host: host.to_owned(),
            port,
        })
    }

    /// Parses every entry; an empty list or a repeated host is refused.
    pub fn parse_list<S: AsRef<str>>(entries: &[S]) -> Result<Vec<Host>, InvalidHost> {
        let mut hosts: Vec<Host> = Vec::with_capacity(entries.len());
        for entry in entries {
            let host = Host::parse(entry.as_ref())?;
            if hosts.contains(&host) {
                return Err(InvalidHost {
                    entry: entry.as_ref().to_owned(),
                    reason: "listed twice",
                });
            }
            hosts.push(host);
        }
        if hosts.is_empty() {
            return Err(InvalidHost {
                entry: String::new(),
                reason: "the list is empty",
            });
        }
        Ok(hosts)
    }

    /// `base` pointed at this host. `base` must not name a Unix socket ([`tcp_base`]).
    pub fn apply(&self, base: &PgConnectOptions) -> PgConnectOptions {
        base.clone().host(&self.host).port(self.port)
    }
}

/// Refuses a base whose URL names a Unix socket (`?host=/dir`): its hosts would be ignored.
pub fn tcp_base(base: &PgConnectOptions) -> Result<(), InvalidHost> {
    if base.get_socket().is_some() || base.get_host().starts_with('/') {
        return Err(InvalidHost {
            entry: base.get_host().to_owned(),
            reason: "the URL names a Unix socket; a host list needs a URL over TCP",
        });
    }
    Ok(())
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// The list as `a:5432, b:5432` (for messages and `/readyz`).
pub fn list_text(hosts: &[Host]) -> String {
    let names: Vec<String> = hosts.iter().map(Host::to_string).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_with_and_without_ports() {
        let ok = |s: &str| Host::parse(s).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok("db1:6432").to_string(), "db1:6432");
        assert_eq!(ok("db1").port, DEFAULT_PORT);
        assert_eq!(ok("[::1]:5433").host, "::1");
        assert_eq!(ok("[::1]").to_string(), "[::1]:5432");
        for bad in [
            "", ":5432", "db:0", "db:x", "::1:5432", "[::1", "a b:1", "u@db:1",
        ] {
            assert!(Host::parse(bad).is_err(), "{bad}");
        }
        let e = Host::parse_list(&["a:1", "a:1"])
            .err()
            .unwrap_or_else(|| panic!("ok"));
        assert_eq!(e.reason, "listed twice");
        assert!(Host::parse_list::<&str>(&[]).is_err());
    }
}
