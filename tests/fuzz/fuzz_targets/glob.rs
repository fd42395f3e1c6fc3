//! libFuzzer entry point for the `glob` target (`scripts/fuzz glob SECONDS`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    lackpy_fuzz::glob(data);
});
