//! Hardware spec files, and the built-in specs embedded in the binary.
//!
//! A spec file is a JSON object with the fields of
//! [`hwwfc_core::HardwareSpec`] (see `specs/h200.json`) plus two strings of
//! provenance:
//!
//! - `source` (required): where the figures come from (a datasheet, a
//!   programming guide, or "virtual accelerator");
//! - `notes` (optional): anything else a reader should know.
//!
//! A spec file may also describe a partition of the GPU it names: an
//! optional `partition` object, `{"sms": N, "smem_kb": K}` (either may be
//! left out), with the meaning of `--sms` and `--smem-kb`
//! ([`super::partition`]); the spec loaded is the partition's. Commands
//! that measure (and `tenants`, which splits the whole GPU) want the whole
//! GPU's spec and take the partition from `--sms` and `--smem-kb`.
//!
//! Unknown fields are rejected. Every error names the file and the field:
//! a missing field, a wrong type or a negative number comes from the
//! deserializer (with the field's path), a zero or inconsistent value from
//! [`hwwfc_core::HardwareSpec::validate`].
//!
//! The built-in specs are the files of `specs/`, compiled into the binary,
//! so `--spec h200` works from any directory.

use super::json;
use super::partition::PartitionArgs;
use anyhow::{anyhow, bail, Result};
use hwwfc_core::HardwareSpec;
use std::path::{Path, PathBuf};

/// The built-in specs: name and the text of `specs/NAME.json`.
pub const BUILTIN: [(&str, &str); 6] = [
    ("stress_gpu", include_str!("../../../specs/stress_gpu.json")),
    ("toy_gpu", include_str!("../../../specs/toy_gpu.json")),
    ("h200", include_str!("../../../specs/h200.json")),
    ("h100", include_str!("../../../specs/h100.json")),
    ("a100", include_str!("../../../specs/a100.json")),
    ("rtx3060", include_str!("../../../specs/rtx3060.json")),
];

/// Names of the built-in specs, in the order of [`BUILTIN`].
pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN.iter().map(|(name, _)| *name).collect()
}

/// Where a spec was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A built-in spec, by name.
    BuiltIn(&'static str),
    /// A file given on the command line.
    File(PathBuf),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::BuiltIn(name) => write!(f, "built-in spec `{name}`"),
            Origin::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// A validated spec and its provenance.
#[derive(Debug, Clone)]
pub struct LoadedSpec {
    /// The spec.
    pub spec: HardwareSpec,
    /// The file's `source` string.
    pub source: String,
    /// The file's `notes` string, if any.
    pub notes: Option<String>,
    /// Where it was read from.
    pub origin: Origin,
    /// The partition the spec was cut to (`--sms`, `--smem-kb`), if any.
    pub partition: Option<super::partition::Partition>,
}

/// Whether a command-line argument names a file rather than a built-in.
pub fn looks_like_path(arg: &str) -> bool {
    arg.contains('/') || arg.contains(std::path::MAIN_SEPARATOR) || arg.ends_with(".json")
}

/// Loads `arg`: a path to a spec file, or the name of a built-in spec.
pub fn load(arg: &str) -> Result<LoadedSpec> {
    if !looks_like_path(arg) {
        if let Some((name, text)) = BUILTIN.iter().find(|(name, _)| *name == arg) {
            return parse(text, Origin::BuiltIn(name));
        }
        if !Path::new(arg).is_file() {
            bail!(
                "unknown spec `{arg}`: no such file, and no built-in spec has this name (built-in specs: {})",
                builtin_names().join(", ")
            );
        }
    }
    let path = PathBuf::from(arg);
    let value = json::read(&path)?;
    from_json(value, Origin::File(path))
}

/// Parses the text of a spec file.
pub fn parse(text: &str, origin: Origin) -> Result<LoadedSpec> {
    let value = json::parse(text, &origin.to_string())?;
    from_json(value, origin)
}

/// Checks and converts a parsed spec file.
pub fn from_json(value: serde_json::Value, origin: Origin) -> Result<LoadedSpec> {
    let serde_json::Value::Object(mut object) = value else {
        bail!("{origin}: expected a JSON object (a hardware spec), found {}", json::type_name(&value));
    };
    let fail = |e: json::FieldError| anyhow!("{origin}: {e}");
    let source = json::take_string(&mut object, "source").map_err(fail)?;
    let notes = json::take_string(&mut object, "notes").map_err(fail)?;
    let asked = match object.remove("partition") {
        Some(v) => {
            let p: FilePartition = json::from_value(v).map_err(|e| anyhow!("{origin}: field `partition`: {e}"))?;
            Some(PartitionArgs { sms: p.sms, smem_kb: p.smem_kb })
        }
        None => None,
    };
    let spec: HardwareSpec = json::from_value(serde_json::Value::Object(object)).map_err(fail)?;
    let Some(source) = source else {
        bail!("{origin}: missing field `source` (where the figures come from)");
    };
    if source.trim().is_empty() {
        bail!("{origin}: field `source`: must not be empty");
    }
    spec.validate().map_err(|e| anyhow!("{origin}: invalid spec: {e}"))?;
    let (spec, partition) = match asked {
        Some(args) => args.apply(&spec).map_err(|e| anyhow!("{origin}: field `partition`: {e}"))?,
        None => (spec, None),
    };
    Ok(LoadedSpec { spec, source, notes, origin, partition })
}

/// The `partition` object of a spec file.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePartition {
    sms: Option<u32>,
    smem_kb: Option<u32>,
}

impl LoadedSpec {
    /// The spec cut to the partition `args` asks for (`--sms`,
    /// `--smem-kb`); unchanged if it asks none. A file that names a
    /// partition of its own takes no second one.
    pub fn cut(self, args: &PartitionArgs) -> Result<LoadedSpec> {
        if !args.is_some() {
            return Ok(self);
        }
        if let Some(p) = self.partition {
            bail!(
                "{}: the file names a partition already ({p}); give --sms and --smem-kb with the whole GPU's spec, or neither",
                self.origin
            );
        }
        let (spec, partition) = args.apply(&self.spec)?;
        Ok(LoadedSpec { spec, partition, ..self })
    }

    /// The spec of the whole GPU, for the commands that measure on it (or
    /// split it): a file that names a partition is refused.
    pub fn whole(self) -> Result<HardwareSpec> {
        match self.partition {
            Some(p) => bail!(
                "{}: the file names a partition ({p}); this command wants the whole GPU's spec, and the partition from --sms and --smem-kb",
                self.origin
            ),
            None => Ok(self.spec),
        }
    }
}

/// The built-in spec whose name appears in a device's name, such as `h200`
/// for `NVIDIA H200`.
pub fn builtin_for_device(device: &str) -> Result<HardwareSpec> {
    let name = device.to_lowercase().replace([' ', '-'], "");
    let found = builtin_names().into_iter().find(|b| name.contains(&b.replace('_', "")));
    match found {
        Some(b) => Ok(load(b)?.spec),
        None => Err(anyhow::anyhow!("no built-in spec matches the device `{device}`; pass --spec FILE")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwwfc_core::presets;

    #[test]
    fn every_builtin_parses() {
        for (name, text) in BUILTIN {
            let loaded = parse(text, Origin::BuiltIn(name)).unwrap();
            assert_eq!(loaded.spec.name.as_str(), name);
        }
    }

    #[test]
    fn virtual_builtins_match_the_core_presets() {
        assert_eq!(load("stress_gpu").unwrap().spec, presets::stress_gpu());
        assert_eq!(load("toy_gpu").unwrap().spec, presets::toy_gpu());
    }

    fn h200() -> serde_json::Value {
        json::parse(BUILTIN[2].1, "h200").unwrap()
    }

    fn error_of(value: serde_json::Value) -> String {
        from_json(value, Origin::File("bad.json".into())).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_file_and_field() {
        let mut v = h200();
        v["sm_count"] = serde_json::json!(-4);
        assert_eq!(error_of(v), "bad.json: field `sm_count`: invalid value: integer `-4`, expected u32");

        let mut v = h200();
        v.as_object_mut().unwrap().remove("l2_bytes");
        assert_eq!(error_of(v), "bad.json: missing field `l2_bytes`");

        let mut v = h200();
        v["peak_tflops"]["f16"] = serde_json::json!("fast");
        assert!(error_of(v).starts_with("bad.json: field `peak_tflops.f16`: invalid type: string"));

        let mut v = h200();
        v["bogus"] = serde_json::json!(1);
        assert!(error_of(v).contains("unknown field `bogus`"));

        let mut v = h200();
        v.as_object_mut().unwrap().remove("source");
        assert!(error_of(v).contains("missing field `source`"));

        let mut v = h200();
        v["sm_count"] = serde_json::json!(0);
        assert_eq!(error_of(v), "bad.json: invalid spec: `sm_count` must be a positive, finite number");
    }

    #[test]
    fn unknown_name_lists_the_builtins() {
        let e = load("nosuchgpu").unwrap_err().to_string();
        assert!(e.contains("stress_gpu, toy_gpu, h200"), "{e}");
    }
}
