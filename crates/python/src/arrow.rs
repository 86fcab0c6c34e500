//! The Arrow C stream interface: a [`Columns`] table exported as one record batch through an
//! `ArrowArrayStream` (pyarrow, polars and duckdb read it, no Arrow crate needed).
//!
//! The structs are the C Data Interface's, field for field (arrow.apache.org, "The Arrow C data
//! interface" and "The Arrow C stream interface"). Each exported struct owns its memory through
//! `private_data` and frees it in its `release` callback, which marks the struct released; a
//! consumer that moves a child out marks the child released, and is then the one to release it.

use crate::table::{Column, Columns};
use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr;
use std::sync::Arc;

/// `ARROW_FLAG_NULLABLE`.
const FLAG_NULLABLE: i64 = 2;

/// `struct ArrowSchema`.
#[repr(C)]
pub struct ArrowSchema {
    format: *const c_char,
    name: *const c_char,
    metadata: *const c_char,
    flags: i64,
    n_children: i64,
    children: *mut *mut ArrowSchema,
    dictionary: *mut ArrowSchema,
    release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    private_data: *mut c_void,
}

/// `struct ArrowArray`.
#[repr(C)]
pub struct ArrowArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut ArrowArray,
    dictionary: *mut ArrowArray,
    release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    private_data: *mut c_void,
}

/// `struct ArrowArrayStream`.
#[repr(C)]
pub struct ArrowArrayStream {
    get_schema: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowSchema) -> c_int>,
    get_next: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowArray) -> c_int>,
    get_last_error: Option<unsafe extern "C" fn(*mut ArrowArrayStream) -> *const c_char>,
    release: Option<unsafe extern "C" fn(*mut ArrowArrayStream)>,
    private_data: *mut c_void,
}

// SAFETY: the stream owns everything its pointers reach (an `Arc` of immutable columns and the
// boxes it allocates); the C stream interface lets any one thread at a time use it.
unsafe impl Send for ArrowArrayStream {}

impl Drop for ArrowArrayStream {
    /// A stream the consumer did not take (its `release` still set) is released with the capsule.
    fn drop(&mut self) {
        if let Some(release) = self.release {
            // SAFETY: `release` is ours (`release_stream`), called once on a live stream.
            unsafe { release(self) };
        }
    }
}

/// What a schema's `private_data` holds: the strings and children it points to.
struct SchemaData {
    format: CString,
    name: CString,
    children: Vec<*mut ArrowSchema>,
}

fn schema(format: &str, name: &str, flags: i64, children: Vec<ArrowSchema>) -> ArrowSchema {
    let children = children.into_iter().map(|c| Box::into_raw(Box::new(c))).collect();
    let mut data = Box::new(SchemaData {
        format: CString::new(format).expect("formats have no NUL"),
        name: CString::new(name.replace('\0', "")).expect("NULs removed"),
        children,
    });
    ArrowSchema {
        format: data.format.as_ptr(),
        name: data.name.as_ptr(),
        metadata: ptr::null(),
        flags,
        n_children: data.children.len() as i64,
        children: data.children.as_mut_ptr(),
        dictionary: ptr::null_mut(),
        release: Some(release_schema),
        private_data: Box::into_raw(data).cast(),
    }
}

unsafe extern "C" fn release_schema(schema: *mut ArrowSchema) {
    // SAFETY: the consumer passes a schema made by `schema` (or null).
    let Some(schema) = (unsafe { schema.as_mut() }) else { return };
    if schema.release.is_none() {
        return;
    }
    // SAFETY: `private_data` is the `SchemaData` box `schema` leaked, freed only here (the
    // release is then unset).
    let data = unsafe { Box::from_raw(schema.private_data.cast::<SchemaData>()) };
    // SAFETY: the children are boxes this schema leaked.
    unsafe { release_children(&data.children) };
    schema.release = None;
}

/// A struct of the C Data Interface with a `release` callback.
trait Releasable {
    fn release(&self) -> Option<unsafe extern "C" fn(*mut Self)>;
}

impl Releasable for ArrowSchema {
    fn release(&self) -> Option<unsafe extern "C" fn(*mut Self)> {
        self.release
    }
}

impl Releasable for ArrowArray {
    fn release(&self) -> Option<unsafe extern "C" fn(*mut Self)> {
        self.release
    }
}

/// Releases each child not moved out (a consumer that moved one marked it released), then frees
/// its box.
///
/// # Safety
/// Each pointer is a box leaked by `Box::into_raw`, freed only here.
unsafe fn release_children<T: Releasable>(children: &[*mut T]) {
    for &child in children {
        // SAFETY: the caller's promise.
        unsafe {
            if let Some(release) = (*child).release() {
                release(child);
            }
            drop(Box::from_raw(child));
        }
    }
}

/// One buffer, typed so that its allocation is aligned for its values.
enum Buffer {
    Bytes(Vec<u8>),
    Offsets(Vec<i32>),
    Floats(Vec<f64>),
    Ints(Vec<i64>),
}

impl Buffer {
    fn as_ptr(&self) -> *const c_void {
        match self {
            Buffer::Bytes(b) => b.as_ptr().cast(),
            Buffer::Offsets(b) => b.as_ptr().cast(),
            Buffer::Floats(b) => b.as_ptr().cast(),
            Buffer::Ints(b) => b.as_ptr().cast(),
        }
    }
}

/// What an array's `private_data` holds: its buffers, the pointer list and its children.
struct ArrayData {
    _buffers: Vec<Option<Buffer>>,
    pointers: Vec<*const c_void>,
    children: Vec<*mut ArrowArray>,
}

fn array(length: usize, null_count: usize, buffers: Vec<Option<Buffer>>, children: Vec<ArrowArray>) -> ArrowArray {
    let pointers = buffers.iter().map(|b| b.as_ref().map_or(ptr::null(), Buffer::as_ptr)).collect();
    let children = children.into_iter().map(|c| Box::into_raw(Box::new(c))).collect();
    let mut data = Box::new(ArrayData { _buffers: buffers, pointers, children });
    ArrowArray {
        length: length as i64,
        null_count: null_count as i64,
        offset: 0,
        n_buffers: data.pointers.len() as i64,
        n_children: data.children.len() as i64,
        buffers: data.pointers.as_mut_ptr(),
        children: data.children.as_mut_ptr(),
        dictionary: ptr::null_mut(),
        release: Some(release_array),
        private_data: Box::into_raw(data).cast(),
    }
}

unsafe extern "C" fn release_array(array: *mut ArrowArray) {
    // SAFETY: the consumer passes an array made by `array` (or null).
    let Some(array) = (unsafe { array.as_mut() }) else { return };
    if array.release.is_none() {
        return;
    }
    // SAFETY: as in `release_schema`.
    let data = unsafe { Box::from_raw(array.private_data.cast::<ArrayData>()) };
    // SAFETY: the children are boxes this array leaked.
    unsafe { release_children(&data.children) };
    array.release = None;
}

/// The validity bitmap of `present` (None when every value is present) and the null count.
fn validity(present: impl Iterator<Item = bool>, length: usize) -> (Option<Buffer>, usize) {
    let mut bits = vec![0u8; length.div_ceil(8)];
    let mut nulls = 0;
    for (i, p) in present.enumerate() {
        if p {
            bits[i / 8] |= 1 << (i % 8);
        } else {
            nulls += 1;
        }
    }
    if nulls == 0 {
        (None, 0)
    } else {
        (Some(Buffer::Bytes(bits)), nulls)
    }
}

fn column_format(column: &Column) -> &'static str {
    match column {
        Column::Text(_) => "u",
        Column::Float(_) => "g",
        Column::Int(_) => "l",
    }
}

fn column_array(column: &Column) -> ArrowArray {
    match column {
        Column::Text(values) => {
            let mut offsets = Vec::with_capacity(values.len() + 1);
            let mut bytes = Vec::new();
            offsets.push(0i32);
            for v in values {
                bytes.extend_from_slice(v.as_bytes());
                offsets.push(i32::try_from(bytes.len()).expect("a text column under 2 GiB"));
            }
            let buffers = vec![None, Some(Buffer::Offsets(offsets)), Some(Buffer::Bytes(bytes))];
            array(values.len(), 0, buffers, Vec::new())
        }
        Column::Float(values) => {
            let (valid, nulls) = validity(values.iter().map(Option::is_some), values.len());
            let data = values.iter().map(|v| v.unwrap_or(0.0)).collect();
            array(values.len(), nulls, vec![valid, Some(Buffer::Floats(data))], Vec::new())
        }
        Column::Int(values) => {
            let (valid, nulls) = validity(values.iter().map(Option::is_some), values.len());
            let data = values.iter().map(|v| v.unwrap_or(0)).collect();
            array(values.len(), nulls, vec![valid, Some(Buffer::Ints(data))], Vec::new())
        }
    }
}

/// The table's schema: a struct of its columns, each nullable.
fn table_schema(table: &Columns) -> ArrowSchema {
    let children =
        table.names.iter().zip(&table.columns).map(|(n, c)| schema(column_format(c), n, FLAG_NULLABLE, Vec::new()));
    schema("+s", "", 0, children.collect())
}

/// The table as one struct array (a record batch).
fn table_batch(table: &Columns) -> ArrowArray {
    let children = table.columns.iter().map(column_array).collect();
    array(table.rows(), 0, vec![None], children)
}

/// What a stream's `private_data` holds: the table and whether its batch was handed out.
struct StreamData {
    table: Arc<Columns>,
    sent: bool,
}

unsafe extern "C" fn get_schema(stream: *mut ArrowArrayStream, out: *mut ArrowSchema) -> c_int {
    // SAFETY: the consumer passes a live stream made by `stream` and a place for the schema.
    unsafe {
        let data = &*(*stream).private_data.cast::<StreamData>();
        ptr::write(out, table_schema(&data.table));
    }
    0
}

unsafe extern "C" fn get_next(stream: *mut ArrowArrayStream, out: *mut ArrowArray) -> c_int {
    // SAFETY: as in `get_schema`.
    unsafe {
        let data = &mut *(*stream).private_data.cast::<StreamData>();
        let batch = if data.sent {
            // The end of the stream: a released array.
            ArrowArray {
                length: 0,
                null_count: 0,
                offset: 0,
                n_buffers: 0,
                n_children: 0,
                buffers: ptr::null_mut(),
                children: ptr::null_mut(),
                dictionary: ptr::null_mut(),
                release: None,
                private_data: ptr::null_mut(),
            }
        } else {
            data.sent = true;
            table_batch(&data.table)
        };
        ptr::write(out, batch);
    }
    0
}

unsafe extern "C" fn get_last_error(_: *mut ArrowArrayStream) -> *const c_char {
    ptr::null()
}

unsafe extern "C" fn release_stream(stream: *mut ArrowArrayStream) {
    // SAFETY: the consumer (or our `Drop`) passes a stream made by `stream`.
    let Some(stream) = (unsafe { stream.as_mut() }) else { return };
    if stream.release.is_none() {
        return;
    }
    // SAFETY: `private_data` is the `StreamData` box `stream` leaked, freed only here.
    drop(unsafe { Box::from_raw(stream.private_data.cast::<StreamData>()) });
    stream.release = None;
}

/// A stream of `table` as one record batch.
pub fn stream(table: Arc<Columns>) -> ArrowArrayStream {
    ArrowArrayStream {
        get_schema: Some(get_schema),
        get_next: Some(get_next),
        get_last_error: Some(get_last_error),
        release: Some(release_stream),
        private_data: Box::into_raw(Box::new(StreamData { table, sent: false })).cast(),
    }
}
