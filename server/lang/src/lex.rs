//! Lexing: guard text into tokens, each with its 1-based column.

use crate::parse::ParseError;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    Int(i64),
    Str(String),
    Ident(String),
    Sym(&'static str),
}

pub(crate) fn lex(src: &str) -> Result<Vec<(usize, Tok)>, ParseError> {
    let chars: Vec<char> = src.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    let err = |column: usize, message: String| ParseError { column, message };
    while i < chars.len() {
        let c = chars[i];
        let col = i + 1;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            let n = text
                .parse()
                .map_err(|_| err(col, format!("number `{text}` is too large")))?;
            out.push((col, Tok::Int(n)));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((col, Tok::Ident(chars[start..i].iter().collect())));
        } else if c == '"' {
            i += 1;
            let start = i;
            while i < chars.len() && chars[i] != '"' {
                i += 1;
            }
            if i >= chars.len() {
                return Err(err(col, "unterminated string".into()));
            }
            out.push((col, Tok::Str(chars[start..i].iter().collect())));
            i += 1;
        } else {
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            let sym = ["==", "!=", "<=", ">=", "&&", "||"]
                .into_iter()
                .find(|s| *s == two)
                .or_else(|| {
                    ["<", ">", "!", "+", "-", "(", ")", ".", ","]
                        .into_iter()
                        .find(|s| s.starts_with(c))
                });
            match sym {
                Some(s) => {
                    i += s.len();
                    out.push((col, Tok::Sym(s)));
                }
                None => return Err(err(col, format!("unexpected character `{c}`"))),
            }
        }
    }
    Ok(out)
}
