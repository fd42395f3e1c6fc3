//! libFuzzer entry point for the `interp` target (`scripts/fuzz interp SECONDS`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    lackpy_fuzz::interp(data);
});
