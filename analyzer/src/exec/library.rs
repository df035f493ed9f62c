//! The library model: what the walk assumes about methods and types outside the analysed
//! sources (pure accessors, aliasing views, counters, primitive types, disk file labels).

use super::{Src, Val};
use crate::sym::Sym;

pub(super) const PRIMITIVES: &[&str] = &[
    "int",
    "long",
    "short",
    "byte",
    "char",
    "boolean",
    "double",
    "float",
    "Integer",
    "Long",
    "Short",
    "Byte",
    "Character",
    "Boolean",
    "Double",
    "Float",
    "String",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "bool",
    "f32",
    "f64",
    "str",
    "NodeId",
    "Option",
];

pub(super) const PURE: &[&str] = &[
    "get",
    "size",
    "len",
    "isEmpty",
    "is_empty",
    "contains",
    "containsKey",
    "containsValue",
    "contains_key",
    "equals",
    "hashCode",
    "toString",
    "compareTo",
    "iter",
    "keys",
    "values",
    "keySet",
    "entrySet",
    "stream",
    "last",
    "first",
    "peek",
    "clone",
    "to_vec",
    "to_owned",
    "copied",
    "cloned",
    "unwrap",
    "unwrap_or",
    "unwrap_or_default",
    "expect",
    "map_or",
    "is_some",
    "is_none",
    "as_ref",
    "longValue",
    "intValue",
    "getOrDefault",
    "max",
    "min",
    "binary_search",
    "starts_with",
    "ends_with",
    "getId",
    // java.util.UUID's accessors (Cassandra's ballots)
    "timestamp",
    "clockSequence",
    "getMostSignificantBits",
    "getLeastSignificantBits",
    "name",
    "ordinal",
    "hash",
    "as_slice",
    "as_str",
    "cmp",
    "partial_cmp",
    "eq",
    "ne",
    "getFirst",
    "getLast",
    "peekFirst",
    "peekLast",
    "firstKey",
    "lastKey",
    "headMap",
    "tailMap",
    "subMap",
    "count",
    "sum",
    "any",
    "all",
    "find",
    "position",
    "filter",
    "map",
    "collect",
    "windows",
    "chunks",
    "rev",
    "enumerate",
    "zip",
    "skip",
    "take",
    "chain",
    "flat_map",
    "fold",
    "into_iter",
];

pub(super) const INCREMENTS: &[&str] = &["incrementAndGet", "getAndIncrement", "increment"];

pub(super) const ALIASING: &[&str] = &[
    "get",
    "get_mut",
    "iter",
    "iter_mut",
    "values",
    "values_mut",
    "keySet",
    "entrySet",
    "last",
    "first",
    "last_mut",
    "first_mut",
    "peek",
    "entry",
    "as_mut",
    "as_ref",
    "unwrap",
    "expect",
    "stream",
    "getFirst",
    "getLast",
    "peekFirst",
    "peekLast",
    "into_iter",
];

/// The type a well-known library call returns (`Arrays.asList(..)` is a `List`), for
/// overload resolution; `class` is the receiver when the call is static (`List.of(..)`).
pub(super) fn library_type(name: &str, class: Option<&str>) -> Option<String> {
    match (name, class) {
        ("asList" | "singletonList" | "emptyList" | "unmodifiableList", _) => Some("List".into()),
        ("of" | "copyOf", Some(c @ ("List" | "Set" | "Map"))) => Some(c.into()),
        _ => None,
    }
}

pub fn getter_field(name: &str) -> Option<String> {
    let rest = name
        .strip_prefix("get")
        .or_else(|| name.strip_prefix("is"))?;
    let mut c = rest.chars();
    let f = c.next()?;
    if !f.is_uppercase() {
        return None;
    }
    Some(f.to_lowercase().collect::<String>() + c.as_str())
}

pub(super) fn is_file_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && !s.contains(char::is_whitespace)
        && !s.contains('{')
        && !s.contains('%')
}

pub(super) fn disk_label(v: Option<&Val>) -> Option<String> {
    let v = v?;
    if let Some(Sym::Str(s)) = v.sym.as_ref().map(|s| match s {
        Sym::Const { value, .. } => (**value).clone(),
        s => s.clone(),
    }) {
        if is_file_label(&s) {
            return Some(s);
        }
    }
    let labels: Vec<String> = v
        .all_taint()
        .into_iter()
        .filter_map(|t| match t {
            Src::S(s) => Some(s),
            _ => None,
        })
        .collect();
    if labels.is_empty() {
        None
    } else {
        Some(labels.join("+"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn getters_name_their_field() {
        assert_eq!(getter_field("getTerm").as_deref(), Some("term"));
        assert_eq!(getter_field("isLeader").as_deref(), Some("leader"));
        assert_eq!(getter_field("get"), None);
        assert_eq!(getter_field("getaway"), None);
    }

    #[test]
    fn the_tables_know_accessors_views_and_counters() {
        assert!(PURE.contains(&"containsKey") && !PURE.contains(&"put"));
        assert!(ALIASING.contains(&"get_mut") && !ALIASING.contains(&"size"));
        assert!(INCREMENTS.contains(&"incrementAndGet"));
        assert!(PRIMITIVES.contains(&"u64") && !PRIMITIVES.contains(&"Vote"));
    }

    #[test]
    fn disk_labels_come_from_string_constants() {
        assert!(is_file_label("log.txt") && !is_file_label("a b") && !is_file_label("{}.log"));
        let name = Val {
            sym: Some(Sym::Str("epoch".into())),
            ..Val::opaque()
        };
        assert_eq!(disk_label(Some(&name)).as_deref(), Some("epoch"));
        let derived = Val {
            taint: [Src::S("snap".into()), Src::N("term".into())].into(),
            ..Val::opaque()
        };
        assert_eq!(disk_label(Some(&derived)).as_deref(), Some("snap"));
        assert_eq!(disk_label(Some(&Val::opaque())), None);
    }
}
