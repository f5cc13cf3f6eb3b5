// Rust symbols for the demangler oracle: generics, closures, trait impls,
// trait objects, references, arrays, tuples, fn pointers, consts, unicode.
#![allow(dead_code)]
pub mod cortex_m_rt {
    #[inline(never)]
    pub fn __cortex_m_rt_main() -> u32 { 7 }
    #[inline(never)]
    pub fn _start_trampoline() -> u32 { 8 }
}
pub struct Wrapper<T>(pub T);
pub trait Sensor { fn read(&self) -> u32; }
impl Sensor for Wrapper<u8> { #[inline(never)] fn read(&self) -> u32 { self.0 as u32 } }
impl<T: Copy + Into<u64>> Wrapper<T> { #[inline(never)] pub fn get(&self) -> u64 { self.0.into() } }
#[inline(never)] pub fn generic<T: core::fmt::Debug, const N: usize>(_x: [T; N]) -> usize { N + core::mem::size_of::<T>() }
#[inline(never)] pub fn with_closure(v: &[u32]) -> u32 { v.iter().map(|x| x * 2).filter(|x| *x > 3).sum() }
#[inline(never)] pub fn dynamic(s: &dyn Sensor) -> u32 { s.read() }
#[inline(never)] pub fn fnptr(f: fn(u32, &str) -> bool) -> bool { f(1, "a") }
#[inline(never)] pub fn tuple(t: (u8, i64, (char, bool))) -> i64 { t.1 }
#[inline(never)] pub fn refs<'a>(a: &'a mut [i16], b: *const f32, c: *mut f64) -> &'a mut [i16] { let _ = (b, c); a }
#[inline(never)] pub fn unicode_ñame() -> u32 { 3 }
#[inline(never)] pub fn boxed(f: Box<dyn Fn(u32) -> u32 + Send>) -> u32 { f(3) }
pub fn use_all() -> u64 {
    let w = Wrapper(5u8);
    let s: &dyn Sensor = &w;
    let mut arr = [1i16, 2];
    (cortex_m_rt::__cortex_m_rt_main() + cortex_m_rt::_start_trampoline()) as u64
        + generic([1u8, 2, 3]) as u64 + generic::<&str, 2>(["a", "b"]) as u64
        + with_closure(&[1, 2, 3]) as u64 + dynamic(s) as u64 + Wrapper(3u16).get() + Wrapper(4u32).get()
        + fnptr(|a, b| a as usize == b.len()) as u64 + tuple((1, 2, ('c', true))) as u64
        + refs(&mut arr, core::ptr::null(), core::ptr::null_mut()).len() as u64 + unicode_ñame() as u64
        + boxed(Box::new(|x| x + 1)) as u64
}
