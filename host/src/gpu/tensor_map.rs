//! TMA descriptors (tensor maps) of device tensors, made by the driver
//! (`cuTensorMapEncodeTiled`) and passed to a kernel by value.

use cudarc::driver::sys::{self, CUresult};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr, DriverError};

/// A tensor map: 128 opaque bytes that tell the copy engine a tensor's
/// address, shape, strides, box and swizzle.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct TensorMap(sys::CUtensorMap);

// SAFETY: a tensor map is plain bytes that the kernel receives by value
// (as a `__grid_constant__` parameter of the same size and layout).
unsafe impl DeviceRepr for TensorMap {}

/// The shape of a row-major 16-bit tensor as the TMA sees it, innermost
/// dimension first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape16 {
    /// Elements of a row (contiguous).
    pub cols: u64,
    /// Rows of one matrix.
    pub rows: u64,
    /// Matrices one after another.
    pub batch: u64,
}

/// The tensor map of `tensor` (fp16, or bf16 where `bf16`), a batch of
/// row-major matrices of `shape`, loaded in boxes of `box_cols x box_rows`
/// with the 128-byte swizzle; elements outside the tensor read as zero.
/// The driver refuses rows that are not 16-byte multiples.
pub fn tiled_16bit(
    stream: &CudaStream,
    tensor: &CudaSlice<u16>,
    shape: Shape16,
    [box_cols, box_rows]: [u32; 2],
    bf16: bool,
) -> Result<TensorMap, DriverError> {
    let (ptr, _read) = tensor.device_ptr(stream);
    let dims = [shape.cols, shape.rows, shape.batch];
    let strides = [shape.cols * 2, shape.cols * shape.rows * 2];
    let boxes = [box_cols, box_rows, 1];
    let element_strides = [1u32; 3];
    let dtype = if bf16 {
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    } else {
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16
    };
    let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
    // SAFETY: every array holds the rank (3) or rank - 1 (strides) values
    // the call reads; `map` is written by the driver before it is read.
    let status = unsafe {
        sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            dtype,
            3,
            ptr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            element_strides.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    match status {
        CUresult::CUDA_SUCCESS => {
            // SAFETY: the driver wrote the map.
            Ok(TensorMap(unsafe { map.assume_init() }))
        }
        e => Err(DriverError(e)),
    }
}
