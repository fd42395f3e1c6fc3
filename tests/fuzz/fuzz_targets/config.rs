//! libFuzzer entry point for the `config` target (`scripts/fuzz config SECONDS`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    lackpy_fuzz::config(data);
});
