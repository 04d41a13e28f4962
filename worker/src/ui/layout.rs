//! The HTML document every `/ui` page is: the panel's style sheet and script (no inline
//! script or style, as the Content-Security-Policy demands), a title and a body.

use super::escape::html;

/// Where the assets are served.
pub const ASSETS: &str = "/ui/assets";

/// A whole page: `title` (escaped here), `body_attrs` (attributes of `<body>`, already
/// escaped by the caller) and `body` (markup built by the caller, every text in it escaped).
pub fn document(title: &str, body_attrs: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"referrer\" content=\"no-referrer\">\
         <title>{title}</title>\
         <link rel=\"stylesheet\" href=\"{ASSETS}/panel.css\">\
         <script src=\"{ASSETS}/panel.js\" defer></script></head>\
         <body{body_attrs}>{body}</body></html>\n",
        title = html(title)
    )
}
