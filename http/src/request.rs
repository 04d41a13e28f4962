//! A request being built: method, URL, headers, body. Invalid parts are remembered and
//! reported when it is sent (as reqwest does), never printed.

use crate::error::HttpError;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::Method;
use http_body_util::Full;

/// One request. Headers added with [`Request::header`] are appended; the client's default
/// headers fill in only the names the request does not carry.
pub struct Request {
    method: Method,
    url: String,
    headers: HeaderMap,
    body: Bytes,
    invalid: bool,
}

impl Request {
    /// A request with `method` to `url` (parsed when sent) and an empty body.
    pub fn new(method: Method, url: impl Into<String>) -> Self {
        Request {
            method,
            url: url.into(),
            headers: HeaderMap::new(),
            body: Bytes::new(),
            invalid: false,
        }
    }

    /// `GET url`.
    pub fn get(url: impl Into<String>) -> Self {
        Self::new(Method::GET, url)
    }

    /// `POST url`.
    pub fn post(url: impl Into<String>) -> Self {
        Self::new(Method::POST, url)
    }

    /// `DELETE url`.
    pub fn delete(url: impl Into<String>) -> Self {
        Self::new(Method::DELETE, url)
    }

    /// Appends a header. A name or value that is not valid HTTP makes the request fail when
    /// sent (with a message that names neither).
    pub fn header<K, V>(mut self, name: K, value: V) -> Self
    where
        HeaderName: TryFrom<K>,
        HeaderValue: TryFrom<V>,
    {
        match (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            (Ok(name), Ok(value)) => {
                self.headers.append(name, value);
            }
            _ => self.invalid = true,
        }
        self
    }

    /// The body.
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// The request hyper sends: the URL parsed (and normalized) as reqwest parses it, the
    /// defaults added where the request has no header of that name.
    pub(crate) fn build(
        self,
        defaults: &HeaderMap,
    ) -> Result<http::Request<Full<Bytes>>, HttpError> {
        let unbuildable = || HttpError::Transport("the request could not be built".into());
        if self.invalid {
            return Err(unbuildable());
        }
        let url = url::Url::parse(&self.url)
            .map_err(|_| HttpError::Transport("the URL is not valid".into()))?;
        let uri: http::Uri = url
            .as_str()
            .parse()
            .map_err(|_| HttpError::Transport("the URL is not valid".into()))?;
        let mut headers = self.headers;
        for (name, value) in defaults {
            if !headers.contains_key(name) {
                headers.insert(name.clone(), value.clone());
            }
        }
        let mut request = http::Request::builder()
            .method(self.method)
            .uri(uri)
            .body(Full::new(self.body))
            .map_err(|_| unbuildable())?;
        *request.headers_mut() = headers;
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_only_missing_names_and_bad_headers_fail_at_build() {
        let mut defaults = HeaderMap::new();
        defaults.insert("x-a", HeaderValue::from_static("default"));
        defaults.insert("x-b", HeaderValue::from_static("default"));
        let built = Request::post("http://h:1/p")
            .header("x-a", "mine")
            .build(&defaults)
            .unwrap();
        assert_eq!(built.headers()["x-a"], "mine");
        assert_eq!(built.headers()["x-b"], "default");
        let bad = Request::get("http://h:1/").header("x-c", "line\nbreak");
        assert_eq!(
            bad.build(&defaults).unwrap_err(),
            HttpError::Transport("the request could not be built".into())
        );
        let e = Request::get("not a url").build(&defaults).unwrap_err();
        assert!(!e.to_string().contains("not a url"), "{e}");
    }
}
