//! Cost-model coefficient files.
//!
//! Three shapes are accepted, two of JSON and one of bytes:
//!
//! - a bare [`hwwfc_core::Coefficients`] object, every field given:
//!   `{"compute_efficiency": 0.75, ..., "transition_scale": 1.0}`;
//! - the wrapper that `hwwfc calibrate` writes:
//!   `{"format_version": 2, "gpu": "NVIDIA H200", "spec": "h200",
//!   "fitted": {...}, "coefficients": {...}}`, where `format_version` must
//!   be [`hwwfc_core::cost::COEFFICIENTS_VERSION`], `gpu` (optional) names
//!   the GPU the coefficients were fitted on, `spec` (optional) the spec
//!   they go with, and `fitted` (optional) records how they were fitted;
//! - a file named `*.postcard`: the coefficients in the core's wire format
//!   ([`hwwfc_core::wire`]), as `hwwfc calibrate` writes them beside the
//!   JSON for the core, the firmware and the C ABI. Its header names the
//!   wire format's version and the cost model's
//!   ([`hwwfc_core::cost::COEFFICIENTS_VERSION`]); the file is refused if
//!   either is not this build's (the first wire format had no cost model's
//!   version: such a file is refused by its format version). It says
//!   nothing of its GPU or spec, and is used as it is, like a bare object.
//!
//! An object with a `format_version` or `coefficients` key is read as the
//! wrapper. Unknown fields are rejected, and every coefficient must be a
//! positive, finite number ([`hwwfc_core::Coefficients::validate`]).
//!
//! Coefficients fitted on one GPU describe that GPU: a wrapper whose
//! `spec` differs from the spec in use, or whose `gpu` differs from the GPU
//! the records were measured on, is refused ([`check_provenance`]) unless
//! the command is given `--allow-other-gpu`, which turns the refusal into a
//! warning. A bare object says nothing of where it comes from and is used
//! as it is.

use super::json::{self, FieldError};
use anyhow::{anyhow, bail, Context, Result};
use hwwfc_core::cost::COEFFICIENTS_VERSION;
use hwwfc_core::{wire, Coefficients};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The wrapper written by calibration.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wrapper {
    format_version: u64,
    #[serde(default)]
    gpu: Option<String>,
    #[serde(default)]
    spec: Option<String>,
    #[serde(default)]
    fitted: Option<Value>,
    coefficients: Value,
}

/// Where coefficients came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// [`Coefficients::default`].
    Default,
    /// Built into the binary: fitted on a real GPU for the spec in use.
    Calibrated {
        /// Where the file lives in the repository.
        path: PathBuf,
        /// The GPU it was fitted on.
        gpu: Option<String>,
    },
    /// Built into the binary for another spec, used for this one where the
    /// records of this one's GPU show that they carry over ([`BORROWED`]).
    Borrowed {
        /// Where the file lives in the repository.
        path: PathBuf,
        /// The GPU it was fitted on.
        gpu: Option<String>,
        /// The spec it was fitted for.
        from: String,
    },
    /// A file, and the GPU its wrapper names.
    File {
        /// The file.
        path: PathBuf,
        /// The wrapper's `gpu`, if given.
        gpu: Option<String>,
    },
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::Calibrated { path, gpu } => {
                write!(f, "calibrated, built in ({}, fitted on {})", path.display(), gpu.as_deref().unwrap_or("?"))
            }
            Origin::Borrowed { path, gpu, from } => write!(
                f,
                "calibrated for `{from}`, built in ({}, fitted on {}), no refit for this spec",
                path.display(),
                gpu.as_deref().unwrap_or("?")
            ),
            Origin::File { path, gpu: Some(gpu) } => write!(f, "{} (fitted on {gpu})", path.display()),
            Origin::File { path, gpu: None } => write!(f, "{}", path.display()),
        }
    }
}

/// Validated coefficients and their origin.
#[derive(Debug, Clone)]
pub struct LoadedCoefficients {
    /// The coefficients.
    pub coefficients: Coefficients,
    /// Where they came from.
    pub origin: Origin,
    /// The spec the wrapper says they go with, if it says.
    pub spec: Option<String>,
}

impl LoadedCoefficients {
    /// The defaults of the cost model.
    pub fn default_model() -> Self {
        LoadedCoefficients { coefficients: Coefficients::default(), origin: Origin::Default, spec: None }
    }
}

/// Checks that coefficients from a file go with the spec in use (`spec`,
/// its name) and, where known, the GPU the records were measured on
/// (`gpu`, as the driver names it). A mismatch is an error that names the
/// file and both sides, unless `allow` (`--allow-other-gpu`); then the
/// returned warning says the same. Defaults and built-in coefficients
/// always pass.
pub fn check_provenance(
    loaded: &LoadedCoefficients,
    spec: &str,
    gpu: Option<&str>,
    allow: bool,
) -> Result<Option<String>> {
    let Origin::File { path, gpu: fitted_on } = &loaded.origin else {
        return Ok(None);
    };
    let mut differs = Vec::new();
    if let Some(s) = loaded.spec.as_deref().filter(|s| *s != spec) {
        differs.push(format!("fitted for spec `{s}`, the spec in use is `{spec}`"));
    }
    if let (Some(g), Some(in_use)) = (fitted_on.as_deref(), gpu) {
        if g != in_use {
            differs.push(format!("fitted on `{g}`, the records are of `{in_use}`"));
        }
    }
    if differs.is_empty() {
        return Ok(None);
    }
    let what = format!("{}: coefficients of another GPU: {}", path.display(), differs.join("; "));
    if allow {
        Ok(Some(format!("{what} (used anyway: --allow-other-gpu)")))
    } else {
        bail!("{what}; refit them on this GPU, or pass --allow-other-gpu to use them anyway")
    }
}

/// Coefficients fitted on real GPUs and built into the binary: the spec
/// name they go with, and the text of their `coefficients.json`.
pub const CALIBRATED: [(&str, &str); 1] = [("h200", include_str!("../../../calib-data/h200/coefficients.json"))];

/// Specs with no coefficients of their own that use another spec's, and
/// why: the other's, with no refit, judged on records of this spec's GPU,
/// beat the cost model's defaults there. The H200's on the H100's half of
/// the corpus (`calib-data/h100/corpus`, 127 workloads): Spearman rho 0.914
/// and a first-choice regret of 3.7%, against rho 0.856 and 11.1% with the
/// defaults.
pub const BORROWED: [(&str, &str); 1] = [("h100", "h200")];

/// The built-in calibrated coefficients of spec `spec_name`, if any: its
/// own, or those it borrows ([`BORROWED`]).
pub fn calibrated_for(spec_name: &str) -> Result<Option<LoadedCoefficients>> {
    if let Some((_, from)) = BORROWED.iter().find(|(n, _)| *n == spec_name) {
        let Some(mut loaded) = own_calibration(from)? else { return Ok(None) };
        if let Origin::Calibrated { path, gpu } = loaded.origin {
            loaded.origin = Origin::Borrowed { path, gpu, from: from.to_string() };
        }
        return Ok(Some(loaded));
    }
    own_calibration(spec_name)
}

/// The calibrated coefficients built in for spec `spec_name` itself.
fn own_calibration(spec_name: &str) -> Result<Option<LoadedCoefficients>> {
    let Some((name, text)) = CALIBRATED.iter().find(|(n, _)| *n == spec_name) else {
        return Ok(None);
    };
    let path = PathBuf::from(format!("calib-data/{name}/coefficients.json"));
    let value: Value = serde_json::from_str(text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let mut loaded = from_json(value, &path)?;
    if let Origin::File { path, gpu } = loaded.origin {
        loaded.origin = Origin::Calibrated { path, gpu };
    }
    Ok(Some(loaded))
}

/// Loads the file `path` (wire format if named `*.postcard`, JSON
/// otherwise), or the defaults when `None`.
pub fn load(path: Option<&Path>) -> Result<LoadedCoefficients> {
    let Some(path) = path else {
        return Ok(LoadedCoefficients::default_model());
    };
    if path.extension().is_some_and(|e| e == "postcard") {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        return from_postcard(&bytes, path);
    }
    let value = json::read(path)?;
    from_json(value, path)
}

/// Decodes coefficients in the wire format; `path` names the file in
/// errors. Coefficients of another wire-format or cost-model version are
/// refused, and every coefficient must be a positive, finite number.
pub fn from_postcard(bytes: &[u8], path: &Path) -> Result<LoadedCoefficients> {
    let file = path.display();
    let coefficients: Coefficients = wire::from_bytes(bytes).map_err(|e| anyhow!("{file}: {e}"))?;
    coefficients.validate().map_err(|name| anyhow!("{file}: field `{name}`: must be a positive, finite number"))?;
    Ok(LoadedCoefficients { coefficients, origin: Origin::File { path: path.to_path_buf(), gpu: None }, spec: None })
}

/// Converts a parsed coefficients file; `path` names it in errors.
pub fn from_json(value: Value, path: &Path) -> Result<LoadedCoefficients> {
    let file = path.display();
    let Value::Object(object) = &value else {
        bail!("{file}: expected a JSON object of coefficients, found {}", json::type_name(&value));
    };
    let wrapped = object.contains_key("format_version") || object.contains_key("coefficients");
    let fail = |e: FieldError| anyhow!("{file}: {e}");
    let (coefficients, gpu, spec, prefix) = if wrapped {
        let w: Wrapper = json::from_value(value).map_err(fail)?;
        let _ = &w.fitted;
        if w.format_version != COEFFICIENTS_VERSION as u64 {
            bail!(
                "{file}: field `format_version`: version {} is not supported (this build reads version {COEFFICIENTS_VERSION})",
                w.format_version
            );
        }
        let c: Coefficients = json::from_value(w.coefficients).map_err(|e| fail(e.under("coefficients")))?;
        (c, w.gpu, w.spec, "coefficients.")
    } else {
        (json::from_value::<Coefficients>(value).map_err(fail)?, None, None, "")
    };
    coefficients
        .validate()
        .map_err(|name| anyhow!("{file}: field `{prefix}{name}`: must be a positive, finite number"))?;
    Ok(LoadedCoefficients { coefficients, origin: Origin::File { path: path.to_path_buf(), gpu }, spec })
}

/// The coefficients a command schedules `spec_name` with: the file at
/// `path` if given, else the calibrated ones built in for the spec, else the
/// defaults; a file fitted for another spec is refused unless
/// `allow_other_gpu`, in which case a warning goes to stderr.
pub fn for_spec(path: Option<&Path>, spec_name: &str, allow_other_gpu: bool) -> Result<LoadedCoefficients> {
    let coefficients = match (path, calibrated_for(spec_name)?) {
        (None, Some(calibrated)) => calibrated,
        (path, _) => load(path)?,
    };
    // Coefficients fitted for another spec describe another GPU.
    if let Some(warning) = check_provenance(&coefficients, spec_name, None, allow_other_gpu)? {
        eprintln!("warning: {warning}");
    }
    Ok(coefficients)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bare() -> Value {
        serde_json::to_value(Coefficients::default()).unwrap()
    }

    fn error_of(value: Value) -> String {
        from_json(value, Path::new("c.json")).unwrap_err().to_string()
    }

    #[test]
    fn accepts_bare_and_wrapped() {
        let c = from_json(bare(), Path::new("c.json")).unwrap();
        assert_eq!(c.coefficients, Coefficients::default());
        let w = json!({"format_version": COEFFICIENTS_VERSION, "gpu": "h200", "coefficients": bare()});
        let c = from_json(w, Path::new("c.json")).unwrap();
        assert_eq!(c.origin, Origin::File { path: "c.json".into(), gpu: Some("h200".into()) });
    }

    #[test]
    fn coefficients_of_another_gpu_are_refused_unless_allowed() {
        let w = json!({"format_version": COEFFICIENTS_VERSION, "gpu": "NVIDIA H200", "spec": "h200", "coefficients": bare()});
        let c = from_json(w, Path::new("c.json")).unwrap();
        assert_eq!(c.spec.as_deref(), Some("h200"));
        assert_eq!(check_provenance(&c, "h200", Some("NVIDIA H200"), false).unwrap(), None);
        assert_eq!(check_provenance(&c, "h200", None, false).unwrap(), None);
        let e = check_provenance(&c, "a100", None, false).unwrap_err().to_string();
        assert_eq!(
            e,
            "c.json: coefficients of another GPU: fitted for spec `h200`, the spec in use is `a100`; refit them on \
             this GPU, or pass --allow-other-gpu to use them anyway"
        );
        let e = check_provenance(&c, "h200", Some("NVIDIA A100-SXM4-80GB"), false).unwrap_err().to_string();
        assert!(e.contains("fitted on `NVIDIA H200`, the records are of `NVIDIA A100-SXM4-80GB`"), "{e}");
        let warning = check_provenance(&c, "a100", Some("NVIDIA A100"), true).unwrap().unwrap();
        assert!(
            warning.contains("spec `h200`") && warning.contains("`NVIDIA H200`") && warning.contains("used anyway")
        );
        // A bare file says nothing of its GPU; the defaults and the built-in
        // coefficients are always fine.
        let bare_file = from_json(bare(), Path::new("c.json")).unwrap();
        assert_eq!(check_provenance(&bare_file, "a100", Some("NVIDIA A100"), false).unwrap(), None);
        let default = LoadedCoefficients::default_model();
        assert_eq!(check_provenance(&default, "a100", None, false).unwrap(), None);
        let builtin = calibrated_for("h200").unwrap().unwrap();
        assert_eq!(check_provenance(&builtin, "h200", None, false).unwrap(), None);
    }

    #[test]
    fn a_spec_without_its_own_calibration_borrows_where_the_records_allow_and_says_so() {
        let own = calibrated_for("h200").unwrap().unwrap();
        let borrowed = calibrated_for("h100").unwrap().unwrap();
        assert_eq!(borrowed.coefficients, own.coefficients);
        assert!(matches!(&borrowed.origin, Origin::Borrowed { from, .. } if from == "h200"));
        let said = borrowed.origin.to_string();
        assert!(said.contains("calibrated for `h200`") && said.contains("no refit"), "{said}");
        // Built in, so no refusal, though fitted for another spec.
        assert_eq!(check_provenance(&borrowed, "h100", Some("NVIDIA H100 80GB HBM3"), false).unwrap(), None);
        assert!(matches!(for_spec(None, "h100", false).unwrap().origin, Origin::Borrowed { .. }));
        // Specs the records say nothing of keep the defaults.
        for spec in ["a100", "rtx3060", "stress_gpu"] {
            assert!(calibrated_for(spec).unwrap().is_none(), "{spec}");
        }
        // Every borrowing names a spec that has its own calibration.
        for (spec, from) in BORROWED {
            assert!(CALIBRATED.iter().any(|(n, _)| *n == from), "{spec} borrows from {from}");
        }
    }

    fn postcard(c: &Coefficients) -> Vec<u8> {
        let mut buf = vec![0u8; <Coefficients as wire::Message>::MAX_ENCODED_LEN];
        wire::to_slice(c, &mut buf).unwrap().to_vec()
    }

    fn postcard_error(bytes: &[u8]) -> String {
        from_postcard(bytes, Path::new("c.postcard")).unwrap_err().to_string()
    }

    #[test]
    fn reads_the_wire_format() {
        let c = from_postcard(&postcard(&Coefficients::default()), Path::new("c.postcard")).unwrap();
        assert_eq!(c.coefficients, Coefficients::default());
        assert_eq!(c.origin, Origin::File { path: "c.postcard".into(), gpu: None });
        assert_eq!(c.spec, None);
    }

    #[test]
    fn rejects_bad_postcard_files() {
        let good = postcard(&Coefficients::default());
        let mut older = good.clone();
        older[2] = COEFFICIENTS_VERSION - 1;
        assert_eq!(
            postcard_error(&older),
            format!(
                "c.postcard: coefficients of cost model version {}; this build reads version {COEFFICIENTS_VERSION}",
                COEFFICIENTS_VERSION - 1
            )
        );
        // The wire format's first version, which had no cost model's byte.
        let old = include_bytes!("../../../tests/fixtures/coefficients-wire-v1.postcard");
        assert_eq!(
            postcard_error(old),
            format!("c.postcard: unsupported format version 1 (this build reads version {})", wire::WIRE_VERSION)
        );
        assert_eq!(postcard_error(&good[..good.len() - 1]), "c.postcard: truncated: the message ends early");
        let mut zero = Coefficients::default().to_array();
        zero[0] = 0.0;
        let e = postcard_error(&postcard(&Coefficients::from_array(zero)));
        assert!(e.starts_with("c.postcard: field `") && e.ends_with("`: must be a positive, finite number"), "{e}");
    }

    #[test]
    fn rejects_bad_files() {
        let mut v = bare();
        v["step_latency_us"] = json!(0.0);
        assert_eq!(error_of(v), "c.json: field `step_latency_us`: must be a positive, finite number");
        let mut v = bare();
        v["extra"] = json!(1.0);
        assert!(error_of(v).contains("unknown field `extra`"));
        let mut v = bare();
        v.as_object_mut().unwrap().remove("launch_scale");
        assert_eq!(error_of(v), "c.json: missing field `launch_scale`");
        let w = json!({"format_version": 1, "coefficients": bare()});
        assert!(error_of(w).contains("version 1 is not supported"));
        let mut inner = bare();
        inner["l2_miss_rate"] = json!(-1.0);
        let w = json!({"format_version": COEFFICIENTS_VERSION, "coefficients": inner});
        assert_eq!(error_of(w), "c.json: field `coefficients.l2_miss_rate`: must be a positive, finite number");
        let mut inner = bare();
        inner["l2_miss_rate"] = json!("x");
        let w = json!({"format_version": COEFFICIENTS_VERSION, "coefficients": inner});
        assert!(error_of(w).starts_with("c.json: field `coefficients.l2_miss_rate`: invalid type"));
        let w = json!({"format_version": COEFFICIENTS_VERSION, "coefficients": bare(), "fudge": true});
        assert!(error_of(w).contains("unknown field `fudge`"));
    }
}
