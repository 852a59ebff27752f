//! The platform (OS and CPU architecture) a multi-platform container image is read as.

use std::fmt;

/// An OS and CPU architecture an image is built for (`linux/amd64`, `linux/arm64/v8`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Platform {
    /// `linux`, `windows`...
    pub os: String,
    /// `amd64`, `arm64`...
    pub architecture: String,
    /// `v8` of `linux/arm64/v8`, when given.
    pub variant: Option<String>,
}

impl Platform {
    /// linux/amd64, the platform chosen when an image has several and none was asked for.
    pub fn linux_amd64() -> Platform {
        Platform {
            os: "linux".into(),
            architecture: "amd64".into(),
            variant: None,
        }
    }

    /// Parses `os/arch` or `os/arch/variant`.
    pub fn parse(s: &str) -> std::result::Result<Platform, String> {
        let parts: Vec<&str> = s.split('/').collect();
        let ok = |p: &str| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
        };
        match parts.as_slice() {
            [os, arch] if ok(os) && ok(arch) => Ok(Platform {
                os: os.to_string(),
                architecture: arch.to_string(),
                variant: None,
            }),
            [os, arch, v] if ok(os) && ok(arch) && ok(v) => Ok(Platform {
                os: os.to_string(),
                architecture: arch.to_string(),
                variant: Some(v.to_string()),
            }),
            _ => Err(format!(
                "{s:?} is not a platform (OS/ARCH or OS/ARCH/VARIANT, as linux/amd64)"
            )),
        }
    }

    /// Whether an image for `other` is one for `self` (a variant matters only when `self`
    /// names one).
    pub fn matches(&self, other: &Platform) -> bool {
        self.os == other.os
            && self.architecture == other.architecture
            && (self.variant.is_none() || self.variant == other.variant)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}
