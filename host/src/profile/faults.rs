//! What the profiler does when the GPU path fails, as plain functions that
//! run without a GPU (and are tested without one): the reason a failed
//! record carries, whether a failure ends the run, and whether a workload
//! fits in device memory.
//!
//! A configuration that does not compile, or whose launch or check fails,
//! is recorded as failed, with its configuration and the compiler's or the
//! driver's message, and the run goes on to the next one; only an error
//! after which the CUDA context cannot be trusted (an illegal address, a
//! failed launch, ...) ends the run, once its record is written. A
//! workload whose buffers do not fit is refused before anything is
//! allocated or launched, with the sizes named.

use crate::database::record::{Record, Status};
use crate::gpu::FLUSH_BYTES;
use cudarc::driver::sys::CUresult;

/// What a fatal failure's reason starts with.
pub const FATAL: &str = "fatal: ";

/// Lines of the compiler's log kept in a record's reason.
const LOG_LINES: usize = 3;

/// Errors after which the CUDA context cannot be trusted: the run stops.
pub fn is_sticky(code: CUresult) -> bool {
    use CUresult::*;
    matches!(
        code,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_UNKNOWN
    )
}

/// The reason of a configuration that did not compile: the first lines of
/// NVRTC's log.
pub fn compile_failure(log: &str) -> String {
    let lines: Vec<&str> = log.lines().map(str::trim).filter(|l| !l.is_empty()).take(LOG_LINES).collect();
    if lines.is_empty() {
        "compile: NVRTC gave no log".to_string()
    } else {
        format!("compile: {}", lines.join(" | "))
    }
}

/// The reason of a driver error at `stage` (`launch`, `timed launch`):
/// the error's name and the driver's message, marked [`FATAL`] where the
/// context is lost.
pub fn driver_failure(stage: &str, code: CUresult, message: Option<&str>) -> String {
    let fatal = if is_sticky(code) { FATAL } else { "" };
    match message {
        Some(m) => format!("{fatal}{stage}: {code:?} ({m})"),
        None => format!("{fatal}{stage}: {code:?}"),
    }
}

/// `base` marked failed with `reason`, and nothing measured.
pub fn failed(mut base: Record, reason: String) -> Record {
    base.status = Status::Failed;
    base.reason = Some(reason);
    base.timing = None;
    base.tflops = None;
    base.gbps = None;
    base
}

/// Whether a record ends the run (its failure left the context unusable).
pub fn is_fatal(rec: &Record) -> bool {
    rec.status == Status::Failed && rec.reason.as_deref().is_some_and(|r| r.starts_with(FATAL))
}

/// After a record is written: `Ok` to go on with the next configuration
/// (a success, or a failure the context survives), the error that ends the
/// run otherwise.
pub fn after(rec: &Record) -> anyhow::Result<()> {
    if is_fatal(rec) {
        anyhow::bail!(
            "the GPU context is lost ({}); the records so far are saved, rerun to resume",
            rec.reason.as_deref().unwrap_or_default()
        );
    }
    Ok(())
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// Whether a workload whose buffers take `need` bytes may run on a device
/// with `free` bytes free: its buffers and the L2-flush buffer must fit in
/// 90% of what is free. The refusal names the workload and the sizes.
pub fn memory_verdict(workload: &str, need: u64, free: u64) -> Result<(), String> {
    let total = need.saturating_add(FLUSH_BYTES as u64);
    let usable = free / 10 * 9;
    if total > usable {
        return Err(format!(
            "out of memory: `{workload}` needs {:.2} GiB of device memory ({:.2} GiB of buffers and {:.2} GiB \
             to flush the L2), {:.2} GiB are free (at most 90% used)",
            gib(total),
            gib(need),
            gib(FLUSH_BYTES as u64),
            gib(free)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::database::record::{read_all, RecordLog, Source};
    use crate::family::Config;
    use crate::gpu::Timing;
    use crate::input::workload_file::Workload;
    use hwwfc_core::space::{self, SpaceKind};
    use hwwfc_core::OpKind;

    fn base(index: u16) -> Record {
        Record::pending(
            Source::Kernel,
            Workload::MatMul {
                name: "mm".into(),
                m: 64,
                n: 64,
                k: 64,
                batch: 1,
                epilogue: None,
                b_layout: Default::default(),
            },
            Some(Config::new(index, &space::states(SpaceKind::Cuda, OpKind::MatMul)[index as usize])),
            "t".into(),
            "2026-01-01T00:00:00Z".into(),
        )
    }

    fn ok(index: u16) -> Record {
        let mut r = base(index);
        r.status = Status::Ok;
        r.error = Some(1e-4);
        r.timing = Some(Timing { median_us: 5.0, min_us: 4.0, max_us: 6.0, spread: 0.1, repeats: 5 });
        r
    }

    const NVRTC_LOG: &str = "\nmatmul.cu(212): error: identifier \"WM\" is undefined\n  int warp_m = WM;\n\n1 error \
                             detected in the compilation of \"matmul.cu\".\nmore\n";

    #[test]
    fn a_compile_error_is_a_failed_record_with_its_configuration_and_the_log() {
        let rec = failed(base(17), compile_failure(NVRTC_LOG));
        assert_eq!(rec.status, Status::Failed);
        assert_eq!(rec.config.map(|c| c.index), Some(17));
        assert_eq!(
            rec.reason.as_deref(),
            Some(
                "compile: matmul.cu(212): error: identifier \"WM\" is undefined | int warp_m = WM; | 1 error detected \
                 in the compilation of \"matmul.cu\"."
            )
        );
        assert!(rec.timing.is_none());
        assert!(!is_fatal(&rec));
        assert!(after(&rec).is_ok(), "the run goes on after a compile error");
        assert_eq!(compile_failure(""), "compile: NVRTC gave no log");
    }

    #[test]
    fn driver_errors_name_the_error_and_the_message() {
        let r = driver_failure(
            "launch",
            CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
            Some("too many resources requested for launch"),
        );
        assert_eq!(r, "launch: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many resources requested for launch)");
        let rec = failed(ok(3), r);
        assert!(!is_fatal(&rec) && after(&rec).is_ok(), "a launch that fails for lack of resources is survivable");
        assert!(rec.timing.is_none() && rec.gbps.is_none());

        let r = driver_failure("timed launch", CUresult::CUDA_ERROR_ILLEGAL_ADDRESS, None);
        assert_eq!(r, "fatal: timed launch: CUDA_ERROR_ILLEGAL_ADDRESS");
        let rec = failed(base(4), r);
        assert!(is_fatal(&rec));
        let e = after(&rec).unwrap_err().to_string();
        assert!(e.contains("GPU context is lost") && e.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{e}");
        // A successful record is never fatal, whatever it says.
        let mut r = ok(5);
        r.reason = Some("fatal: no".into());
        assert!(after(&r).is_ok());
    }

    /// The records a run writes around failures: each one as it is made,
    /// failures with their configuration and reason, then the rest; a fatal
    /// failure is written before the run stops, and a rerun resumes after
    /// it.
    #[test]
    fn failures_are_recorded_and_the_run_goes_on_until_a_fatal_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.jsonl");
        let made = [
            ok(0),
            failed(base(1), compile_failure(NVRTC_LOG)),
            failed(base(2), driver_failure("launch", CUresult::CUDA_ERROR_INVALID_VALUE, Some("invalid argument"))),
            failed(base(3), "relative error 1.2e-1 >= 1e-2".into()),
            ok(4),
            failed(base(5), driver_failure("launch", CUresult::CUDA_ERROR_ILLEGAL_ADDRESS, None)),
            ok(6),
        ];
        let mut log = RecordLog::open(&path).unwrap();
        let mut stopped = None;
        for rec in &made {
            log.append(rec).unwrap();
            if let Err(e) = after(rec) {
                stopped = Some(e);
                break;
            }
        }
        assert!(stopped.is_some());
        let written = read_all(&path).unwrap();
        assert_eq!(written, made[..6].to_vec(), "every record up to the fatal one, in order");
        assert_eq!(written.iter().filter(|r| r.status == Status::Failed).count(), 4);
        assert!(written.iter().all(|r| r.config.is_some()));
        let log = RecordLog::open(&path).unwrap();
        assert_eq!(log.resumed, 6);
        assert!(!log.contains(&ok(6).key()), "the configuration after the fatal failure is measured on the rerun");
    }

    #[test]
    fn a_workload_that_does_not_fit_is_refused_with_its_sizes() {
        let gb = 1u64 << 30;
        assert_eq!(memory_verdict("small", gb, 140 * gb), Ok(()));
        let e = memory_verdict("big", 130 * gb, 139 * gb).unwrap_err();
        assert_eq!(
            e,
            "out of memory: `big` needs 130.25 GiB of device memory (130.00 GiB of buffers and 0.25 GiB to flush \
             the L2), 139.00 GiB are free (at most 90% used)"
        );
        // The flush buffer counts: it alone does not fit in 256 MiB free.
        assert!(memory_verdict("tiny", 1, 256 << 20).is_err());
        // Sizes at the edge of u64 are refused, not wrapped.
        assert!(memory_verdict("huge", u64::MAX, u64::MAX).is_err());
        assert!(memory_verdict("none free", 0, 0).is_err());
    }
}
