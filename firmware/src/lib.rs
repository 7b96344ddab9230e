//! # hwwfc-firmware
//!
//! What the benchmark image (`src/main.rs`) and the on-target tests
//! (`tests/ontarget.rs`) share on the Cortex-M4F of QEMU's `mps2-an386`:
//!
//! - the exits: a panic, a HardFault or any unexpected exception logs what
//!   happened over defmt and ends QEMU through semihosting with a non-zero
//!   status, so a broken program can neither hang nor pass ([`exit`]);
//! - an instruction counter on SysTick ([`counter`]): under QEMU's
//!   `-icount shift=0` an instruction takes 1 ns of virtual time and SysTick
//!   counts the board's 25 MHz core clock, so one tick is 40 instructions
//!   (the on-target test `systick_ticks_every_40_instructions` checks it
//!   against a loop of known length);
//! - a stack high-water mark ([`stack`]): the stack is painted with a
//!   pattern, and after a run the lowest word that changed is its deepest
//!   point;
//! - the records the host reads back from the decoded log ([`report`]).
//!
//! Everything leaves the device as defmt frames on the semihosting console:
//! nothing else writes there, so the stream never mixes text and frames.
//! No heap: nothing here or in the core allocates, and no allocator is
//! linked.

#![no_std]

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use cortex_m_rt::{exception, ExceptionFrame};
use defmt_semihosting as _;

pub use hwwfc_fixtures as fixtures;

/// Exit status of a program whose checks all passed.
pub const EXIT_SUCCESS: i32 = 0;
/// Exit status after a failed check.
pub const EXIT_FAILURE: i32 = 1;
/// Exit status after a panic.
pub const EXIT_PANIC: i32 = 101;
/// Exit status after a HardFault.
pub const EXIT_HARDFAULT: i32 = 102;
/// Exit status after an exception that has no handler.
pub const EXIT_UNEXPECTED_EXCEPTION: i32 = 103;

/// Ends the program: QEMU exits with `code` (semihosting `SYS_EXIT`).
pub fn exit(code: i32) -> ! {
    semihosting::process::exit(code)
}

/// Set by the first failure, so that a failure while reporting one (a
/// fault inside the logger, say) exits at once instead of recursing.
static FAILING: AtomicBool = AtomicBool::new(false);

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    if !FAILING.swap(true, Ordering::Relaxed) {
        // Without `core::fmt` (its formatting machinery would take some
        // 3 KB of flash): the message where it is a plain string, and the
        // place.
        let message = info.message().as_str().unwrap_or("(formatted message)");
        match info.location() {
            Some(at) => defmt::error!("panicked at {=str}:{=u32}: {=str}", at.file(), at.line(), message),
            None => defmt::error!("panicked: {=str}", message),
        }
    }
    exit(EXIT_PANIC)
}

// `defmt::panic!` (and defmt-test's failed checks) log their message
// themselves, then come here.
#[defmt::panic_handler]
fn defmt_panic() -> ! {
    FAILING.store(true, Ordering::Relaxed);
    exit(EXIT_PANIC)
}

#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    if !FAILING.swap(true, Ordering::Relaxed) {
        // SAFETY: reads of the System Control Block's fault status registers.
        let (hfsr, cfsr, bfar) = unsafe {
            let scb = &*cortex_m::peripheral::SCB::PTR;
            (scb.hfsr.read(), scb.cfsr.read(), scb.bfar.read())
        };
        defmt::error!(
            "HardFault: pc={=u32:#010x} lr={=u32:#010x} hfsr={=u32:#010x} cfsr={=u32:#010x} bfar={=u32:#010x}",
            frame.pc(),
            frame.lr(),
            hfsr,
            cfsr,
            bfar
        );
    }
    exit(EXIT_HARDFAULT)
}

#[exception]
unsafe fn DefaultHandler(irqn: i16) -> ! {
    if !FAILING.swap(true, Ordering::Relaxed) {
        defmt::error!("unexpected exception or interrupt {=i16}", irqn);
    }
    exit(EXIT_UNEXPECTED_EXCEPTION)
}

/// Takes the core peripherals, guards the stack's bottom and starts the
/// instruction counter. Call once, first thing.
pub fn init() {
    match cortex_m::Peripherals::take() {
        Some(p) => {
            stack::guard(&p.MPU);
            stack::paint();
            counter::start(p.SYST);
        }
        None => {
            defmt::error!("init: the core peripherals were taken already");
            exit(EXIT_FAILURE)
        }
    }
}

/// An instruction counter on SysTick.
pub mod counter {
    use core::sync::atomic::{AtomicU32, Ordering};
    use cortex_m::peripheral::{syst::SystClkSource, SYST};
    use cortex_m_rt::exception;

    /// SysTick counts down from this value and wraps (24 bits).
    const RELOAD: u32 = 0x00FF_FFFF;

    /// The core clock of `mps2-an386` that SysTick counts, in Hz.
    pub const CORE_CLOCK_HZ: u32 = 25_000_000;

    /// Instructions per SysTick tick under `-icount shift=0` (one
    /// instruction = 1 ns of virtual time; 1 s / 25 MHz = 40 ns).
    pub const INSTRUCTIONS_PER_TICK: u32 = 1_000_000_000 / CORE_CLOCK_HZ;

    static WRAPS: AtomicU32 = AtomicU32::new(0);

    #[exception]
    fn SysTick() {
        WRAPS.fetch_add(1, Ordering::Relaxed);
    }

    /// Starts SysTick on the core clock, wrapping every 2^24 ticks with an
    /// interrupt that counts the wraps.
    pub fn start(mut syst: SYST) {
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(RELOAD);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
    }

    /// Ticks since [`start`].
    pub fn ticks() -> u64 {
        loop {
            let wraps = WRAPS.load(Ordering::Relaxed);
            let current = SYST::get_current();
            if WRAPS.load(Ordering::Relaxed) == wraps {
                return wraps as u64 * (RELOAD as u64 + 1) + (RELOAD - current) as u64;
            }
        }
    }
}

/// The stack guard, stack painting and the high-water mark.
///
/// The stack region (memory.x) sits at the bottom of RAM, below the
/// statics, so that it cannot grow into them. Its lowest
/// [`GUARD_BYTES`](stack::GUARD_BYTES) are an MPU region without access:
/// an overflow faults there (and since the fault cannot stack its frame,
/// the core locks up, which QEMU ends with a failure) instead of running
/// on below RAM, where QEMU's board maps nothing and ignores the writes.
pub mod stack {
    use core::ptr;
    use cortex_m::peripheral::MPU;

    /// Bytes at the bottom of the stack region that no access may touch: a
    /// frame larger than this could still step over the guard.
    pub const GUARD_BYTES: usize = 1024;

    /// The pattern of unused stack (cortex-m-rt's `paint-stack` uses the
    /// same).
    pub const PAINT: u32 = 0xCCCC_CCCC;

    extern "C" {
        // From memory.x: the stack region's bottom and top.
        static _stack_end: u32;
        static _stack_start: u32;
    }

    /// The lowest usable and the top address of the stack.
    fn bounds() -> (usize, usize) {
        // Only the addresses of the linker symbols are taken.
        (ptr::addr_of!(_stack_end) as usize + GUARD_BYTES, ptr::addr_of!(_stack_start) as usize)
    }

    /// Makes the lowest [`GUARD_BYTES`] of the stack region inaccessible
    /// (MPU region 0; the default memory map stays in force elsewhere).
    pub fn guard(mpu: &MPU) {
        let base = ptr::addr_of!(_stack_end) as u32;
        // RASR: execute never, no access, size 2^(9+1) = 1 KiB, enabled.
        const RASR: u32 = (1 << 28) | (9 << 1) | 1;
        const _: () = assert!(GUARD_BYTES == 1 << 10);
        // SAFETY: programs region 0 over the guard, then enables the MPU
        // with the default map as background for privileged code.
        unsafe {
            mpu.rnr.write(0);
            mpu.rbar.write(base & !(GUARD_BYTES as u32 - 1));
            mpu.rasr.write(RASR);
            mpu.ctrl.write(0b101);
        }
        cortex_m::asm::dsb();
        cortex_m::asm::isb();
    }

    /// Usable bytes of the stack region (less the guard).
    pub fn size() -> usize {
        let (bottom, top) = bounds();
        top - bottom
    }

    /// Paints the unused stack: everything below the current stack pointer
    /// (less a margin for this function's own calls).
    #[inline(never)]
    pub fn paint() {
        let (bottom, _) = bounds();
        let sp = cortex_m::register::msp::read() as usize;
        let end = sp.saturating_sub(64) & !3;
        let mut p = bottom;
        while p < end {
            // SAFETY: [bottom, sp - 64) is the stack region below the
            // current stack pointer, which nothing uses (an interrupt that
            // stacks a frame there meanwhile is finished before we return).
            unsafe { ptr::write_volatile(p as *mut u32, PAINT) };
            p += 4;
        }
    }

    /// The deepest the stack has reached since the last [`paint`], in bytes
    /// from its top (the whole depth, with the frames of the callers).
    pub fn high_water() -> usize {
        let (bottom, top) = bounds();
        let mut p = bottom;
        // SAFETY: reads of the stack region.
        while p < top && unsafe { ptr::read_volatile(p as *const u32) } == PAINT {
            p += 4;
        }
        top - p
    }
}

/// What a measured run took.
#[derive(Clone, Copy, Debug, defmt::Format)]
pub struct Measure {
    /// SysTick ticks (see [`counter::INSTRUCTIONS_PER_TICK`]).
    pub ticks: u32,
    /// Stack high-water mark during the run, in bytes from the stack's top
    /// (the whole depth, with the callers' frames: with LTO the core's
    /// functions are inlined into them, so no boundary between the two
    /// could be measured).
    pub stack: u32,
}

static PEAK_STACK: AtomicU32 = AtomicU32::new(0);

/// The deepest stack of any [`measure`]d run so far, and of the program
/// since its last run.
pub fn peak_stack() -> usize {
    (PEAK_STACK.load(Ordering::Relaxed) as usize).max(stack::high_water())
}

/// Runs `f`, counting its ticks and its deepest stack.
#[inline(never)]
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, Measure) {
    stack::paint();
    let start = counter::ticks();
    let r = f();
    let end = counter::ticks();
    let stack = stack::high_water() as u32;
    PEAK_STACK.fetch_max(stack, Ordering::Relaxed);
    let ticks = u32::try_from(end - start).unwrap_or(u32::MAX);
    (r, Measure { ticks, stack })
}

/// The records the host reads from the decoded log: one line each,
/// `hwwfc:<kind>` then `key=value` fields (a byte list is last).
pub mod report {
    use super::Measure;
    use hwwfc_fixtures::{Case, Solver};

    /// The cost of one phase of a case (`build`, `wfc`, `exact`,
    /// `encode-wfc`, `encode-exact`).
    pub fn phase(case: &Case, phase: &str, m: &Measure) {
        defmt::println!(
            "hwwfc:phase model={=str} spec={=str} phase={=str} ticks={=u32} stack={=u32}",
            case.model,
            case.spec,
            phase,
            m.ticks,
            m.stack
        );
    }

    /// The encoded schedule a solver found for a case.
    pub fn schedule(case: &Case, solver: Solver, bytes: &[u8]) {
        defmt::println!(
            "hwwfc:schedule model={=str} spec={=str} solver={=str} bytes={=[u8]}",
            case.model,
            case.spec,
            solver.name(),
            bytes
        );
    }

    /// The stack region and the deepest the program went in it
    /// ([`peak_stack`](super::peak_stack)).
    pub fn stack(region: usize, high_water: usize) {
        defmt::println!("hwwfc:stack region={=usize} high_water={=usize}", region, high_water);
    }
}
