//! libFuzzer entry point for the `ipc_frame` target (`scripts/fuzz ipc_frame SECONDS`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    lackpy_fuzz::ipc_frame_full(data);
});
