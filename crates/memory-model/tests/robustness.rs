//! Untrusted text (case strings on the command line, llc output) never panics the parsers.

use gfxkit_memory_model::conformance::{normalize_strict, split_asm};
use gfxkit_memory_model::Case;
use proptest::prelude::*;

proptest! {
    #[test]
    fn case_parser_never_panics(s in "[a-z_;=+\\-]{0,80}") {
        if let Ok(c) = s.parse::<Case>() {
            // Anything accepted prints back to something that parses to the same case.
            prop_assert_eq!(c.to_string().parse::<Case>().unwrap(), c);
        }
    }

    #[test]
    fn case_parser_accepts_mutations_of_valid_cases_or_says_why(
        i in 0usize..5260, cut in 0usize..80, junk in "[a-z=;]{0,6}"
    ) {
        let all = Case::all();
        let text = all[i % all.len()].to_string();
        let cut = cut.min(text.len());
        let s = format!("{}{}", &text[..cut], junk);
        match s.parse::<Case>() {
            Ok(c) => prop_assert_eq!(c.to_string().parse::<Case>().unwrap(), c),
            Err(e) => prop_assert!(!e.why.is_empty()),
        }
    }

    #[test]
    fn asm_normalizer_never_panics(s in "(\t?[a-z_0-9]{0,12}( [a-z0-9:\\[\\](),]{0,10}){0,4}\n|\t; MMBEGIN [0-9]{1,3}\n|\t; MMEND [0-9]{1,3}\n){0,20}") {
        for (_, lines) in split_asm(&s) {
            let _ = normalize_strict(lines);
        }
        let _ = normalize_strict(s.lines());
    }
}
