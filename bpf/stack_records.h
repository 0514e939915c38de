/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stacks on events (--stacks, the cpu family's samples): what bpf/stack.bpf.h reads, how the
 * recorder writes stacks down (user/stacks/), and how BPF reads a CPython's frames
 * (user/python/). Included by records.h: stacks are part of every recording's contract.
 */
#ifndef BPFSIGHT_STACK_RECORDS_H
#define BPFSIGHT_STACK_RECORDS_H

#include "records.h"

/*
 * One call stack, interned by the recorder: written once, before the first record that names
 * its id. Frames follow the header, innermost first. Native frames are symbolized while the
 * process lives (module, function, address relative to the module), so a file never needs the
 * traced machine to be read. hdr.pid/tid/ts: of the first record that used it.
 */
#define BS_REC_STACK 0x0b

struct bs_stack {
	struct bs_hdr h;
	__u32 id; /* > 0, unique in the file */
	__u16 nframes;
	__u16 flags; /* BS_STACK_* */
		     /* struct bs_frame frames[nframes]; */
};

#define BS_STACK_TRUNCATED 0x1 /* deeper frames were cut at the depth cap */

struct bs_frame {
	__u64 addr;    /* native: the module's ELF address (or the raw address when unknown) */
	__u32 func_id; /* string id of the function (demangled), 0 = unknown */
	__u32 file_id; /* string id of the module (native) or source file (python), 0 = unknown */
	__u32 line;    /* python: line number; else 0 */
	__u32 kind;    /* BS_FRAME_* */
};

#define BS_FRAME_NATIVE 1 /* user-space machine code */
#define BS_FRAME_PYTHON 2 /* a Python function (file, line) */
/*
 * A marker: the unwind stopped here. file_id: the module it stopped in; line: why (BS_CUT_*):
 * the module had no frame pointers (0, every file before unwind tables), or its unwind table
 * (bpf/unwind_table.h) said the next frame cannot be found there.
 */
#define BS_FRAME_CUT   3
#define BS_CUT_NO_FP   0 /* code without frame pointers, and no table for it (yet) */
#define BS_CUT_NO_FDE  1 /* the table covers no function at the address */
#define BS_CUT_EXPR    2 /* a DWARF expression or register rule the table cannot hold */
#define BS_CUT_BAD_FDE 3 /* the file's unwind information was malformed there */
#define BS_CUT_BAD_CFA 4 /* the frame the table gave lay outside the stack, or was unreadable */
/*
 * Not a failure: the walk read the native frames its family keeps (--mem-native-frames) and
 * left the outer ones out; the Python frames follow whole.
 */
#define BS_CUT_KEPT    5
#define BS_CUT_REASONS 6

#define BS_STACK_MAX_FRAMES 128 /* frames kept per stack: deeper ones are cut (TRUNCATED) */

/*
 * An event's stack (--stacks), as BPF read it (ring only, never on disk): written just
 * before the event's own record; hdr.pid/tid/ts are the event's. The recorder symbolizes it
 * and writes a STACK_REF in its place. Addresses and Python frames follow as in
 * bs_cpu_sample_raw.
 */
#define BS_REC_STACK_RAW 0x0c

struct bs_stack_raw {
	struct bs_hdr h;
	__u32 nips;
	__u32 flags; /* BS_CPU_PYTHON, BS_CPU_GIL (the thread held the GIL), BS_STACK_OWN */
	__u32 npy;
	__u16 event_type; /* the BS_REC_* of the event it belongs to */
	__u16 _pad;
	/* __u64 ips[nips]; struct bs_py_frame py[npy]; */
};

/* The stack of one event: the record of type EVENT_TYPE with this hdr.tid and hdr.ts. */
#define BS_REC_STACK_REF 0x0d

struct bs_stack_ref {
	struct bs_hdr h;
	__u32 stack_id;	  /* bs_stack id */
	__u16 event_type; /* BS_REC_* */
	__u16 flags;	  /* BS_CPU_GIL when the thread held the GIL */
};

/*
 * One Python frame as BPF saw it: the code object, the instruction it was at, and what
 * identifies the code object when user space reads it later (BS_PY_NAME_ID, BS_PY_FILE_ID):
 * its name and file objects' addresses mixed with the name's hash and the first line. A
 * code object freed meanwhile and its memory reused (pymalloc reuses the last freed block
 * first, for the code object and its strings alike) is named only when the new one has the
 * same name, file object and first line.
 */
struct bs_py_frame {
	__u64 code;
	__u64 instr; /* prev_instr (3.11, 3.12) or instr_ptr (3.13+) */
	__u64 name;  /* co_name ^ co_name->hash */
	__u64 file;  /* co_filename ^ co_firstlineno << 40; bit 0: its eval-loop call's first */
};

#define BS_PY_NAME_ID(name_ptr, name_hash) ((name_ptr) ^ (name_hash))
#define BS_PY_FILE_ID(file_ptr, firstlineno)                                                       \
	(((file_ptr) ^ ((__u64)(__u32)(firstlineno) << 40)) & ~BS_PY_FRAME_ENTRY)
#define BS_PY_STR_HASH 24 /* PyASCIIObject: hash (3.11+) */

#define BS_PY_FRAME_ENTRY 0x1ull /* in bs_py_frame.file: the eval loop was entered here */
#define BS_PY_MAX_FRAMES  64	 /* Python frames read per sample: deeper ones are cut */
#define BS_PY_CODES	  16384	 /* code objects whose identity BPF keeps (py_codes) */
#define BS_PY_NONE	  0xffffffffu
#define BS_PY_ALL	  0xfffffffeu /* fr_entry: every frame is its own eval-loop call (<= 3.10) */

/*
 * How BPF reads one process's Python frames (user/python/py_stack.c fills it from the version):
 * the thread holding the GIL is the one whose Python frames are read.
 */
struct bs_py_cfg {
	__u64 locked;	       /* &gil->locked (int) */
	__u64 holder;	       /* &gil->last_holder (PyThreadState *) */
	__u32 tid_off;	       /* PyThreadState: native_thread_id, or thread_id (pthread_t) */
	__u32 pthread_tid_off; /* 0: tid_off is native_thread_id; else (3.8-3.10) it is thread_id,
				* the pthread_t, matched with the task's fs base (this offset of
				* the tid in struct pthread is the gil family's, unused here) */
	__u32 ts_frame;	       /* PyThreadState: cframe (3.11, 3.12) or current_frame (3.13+) */
	__u32 cframe_frame;    /* _PyCFrame: current_frame; BS_PY_NONE when ts_frame is it */
	__u32 fr_code;	       /* _PyInterpreterFrame: f_code / f_executable */
	__u32 fr_prev;	       /* previous */
	__u32 fr_instr;	       /* prev_instr / instr_ptr */
	__u32 fr_owner;	       /* owner (char) */
	__u32 fr_entry;	       /* is_entry (3.11, bool); BS_PY_NONE */
	__u32 owner_cstack;    /* owner of the eval loop's entry frames (3.12+: 3); BS_PY_NONE */
	__u32 co_name;	       /* PyCodeObject: co_name */
	__u32 co_filename;     /* co_filename */
	__u32 co_firstlineno;  /* co_firstlineno (int) */
	__u32 threads_head;    /* PyInterpreterState: threads.head (0 = no list walk) */
	__u32 ts_gil;	       /* PyThreadState: the u32 that says its thread holds the GIL
				* (3.12 _status.active, 3.13 _status.holds_gil, 3.14+ holds_gil);
				* BS_PY_NONE: the GIL's holder says it (<= 3.11) */
	__u32 ts_gil_mask;     /* its bits that say so */
	__u64 interp;	       /* the main interpreter: its thread states find the threads
				* that released the GIL */
	__u32 code_gen;	       /* this registration's number: py_codes keys of an earlier
				* image of the pid (before an exec) never match */
	__u32 code_cache;      /* 1: a probe on the code objects' dealloc removes their
				* py_codes entries, so BPF may keep identities there */
	__u64 code_frees;      /* code objects freed: counted by that probe (0 from user
				* space); a walk's identities stay good while it stands */
};

/*
 * A code object's identity as BPF read it (bs_py_frame's name and file), kept between
 * events in the py_codes map while the object lives: the probe on its type's tp_dealloc
 * (bpf/pycode.bpf.c) removes the entry before the memory can be reused.
 */
struct bs_py_code_key {
	__u32 pid;
	__u32 gen; /* bs_py_cfg.code_gen */
	__u64 code;
};

struct bs_py_code_id {
	__u64 name, file;
};

/* A Python thread holding the GIL. */
#define BS_CPU_GIL 0x2
/* A thread of a Python process whose frames bpfsight can read (BS_CPU_GIL says if it held it). */
#define BS_CPU_PYTHON 0x4
/*
 * Ring only (BS_REC_CPU_SAMPLE_RAW, BS_REC_STACK_RAW; never on disk): the first
 * BS_STACK_TOP_WORDS address words are the words on top of the user stack, the sampled
 * instruction and the walk's return addresses follow (user/stacks/stack_svc.c finds there the
 * return addresses a frame-pointer walk misses: functions that had no frame of their own).
 */
#define BS_CPU_LEAF	   0x8
#define BS_STACK_TOP_WORDS 8
/*
 * Ring only (BS_REC_STACK_RAW): the stack was read in a probe of the traced process's own
 * tracing code (the cupti-shim's stack sites, --stacks=torch): its innermost addresses in the
 * file of the first one are that code's, not the program's, and are dropped.
 */
#define BS_STACK_OWN 0x10
/*
 * Ring only (BS_REC_CPU_SAMPLE_RAW, BS_REC_STACK_RAW): how the native walk ended, in these
 * bits (bpf/stack_native.bpf.h): 0, where a frame pointer could not be followed (the
 * recorder decides from the frames whether that was the thread's first function);
 * BS_STACK_END_WHOLE, at the outermost frame an unwind table marks (the stack is whole);
 * else a stop an unwind table said, BS_CUT_* + 1.
 */
#define BS_STACK_END_SHIFT 8
#define BS_STACK_END_MASK  0xf00
#define BS_STACK_END_WHOLE 1
/* Ring only: the innermost frame was unwound by a table (the words on top are not needed). */
#define BS_STACK_UNW_FIRST 0x1000

/*
 * What the unwind tables (bpf/unwind_table.h) took, as the recorder's end-of-run line says it:
 * written when the recording stops (and at a flush or a flight dump, so those files hold it
 * too), only when some file needed a table; the latest one in a file holds. Its type is in
 * merge's block because the recording's own is full (records.h). hdr.pid/tid: 0. Files of
 * bpfsight before the tables' store have its first BS_UNWIND_USAGE_V1 bytes (no built,
 * cached, refused, cache_ns).
 */
#define BS_REC_UNWIND_USAGE 0xa2
#define BS_UNWIND_USAGE_V1  80

struct bs_unwind_usage {
	struct bs_hdr h;
	__u32 files;	 /* files with a table loaded */
	__u32 failed;	 /* files that needed one and have none (no .eh_frame, too big, map full) */
	__u32 procs;	 /* processes with mappings registered */
	__u32 full;	 /* of FAILED: refused because the rows' map was full */
	__u64 rows;	 /* rows loaded */
	__u64 cap_rows;	 /* rows the map holds */
	__u64 bytes;	 /* BPF memory of the rows loaded */
	__u64 cap_bytes; /* the rows' map's size, reserved when the recording starts */
	__u64 build_ns;	 /* time spent building tables */
	__u32 built;	 /* tables built (none in the store, or one it refused) */
	__u32 cached;	 /* tables read from the store of earlier recordings */
	__u32 refused;	 /* store entries refused (corrupt, not the recorder's): built again */
	__u32 fp_files;	 /* files built with frame pointers: walked by them, no rows loaded */
	__u64 cache_ns;	 /* time spent reading tables from the store */
};

/*
 * A CPython process whose Python frames (and GIL holder's code, thread names) are not read: a
 * version or build whose layout cannot be read (docs/STACKS.md, "Versions and builds"), written
 * by the stack service once per process (hdr.pid) when it decides so. `info` and the verdict
 * say it, so that native-only stacks are never silent. In merge's block (records.h).
 */
#define BS_REC_PY_UNREAD 0xa5

struct bs_py_unread {
	struct bs_hdr h;
	__u32 py_version; /* PY_VERSION_HEX, 0 = unknown */
	__u32 flags;	  /* BS_PY_UNREAD_* */
	__u32 object_id;  /* bs_string: the ELF file holding the interpreter */
	__u32 why_id;	  /* bs_string: what is missing */
};

#define BS_PY_UNREAD_FREE_THREADED 0x1 /* a free-threaded build (its debug offsets' flag) */

BS_ASSERT_RECORD(bs_stack, 32);
BS_ASSERT_RECORD(bs_stack_raw, 40);
BS_ASSERT_RECORD(bs_stack_ref, 32);
BS_ASSERT_RECORD(bs_frame, 24);
BS_ASSERT_RECORD(bs_py_frame, 32);
BS_ASSERT_RECORD(bs_py_cfg, 104);
BS_ASSERT_RECORD(bs_py_code_key, 16);
BS_ASSERT_RECORD(bs_py_code_id, 16);
BS_ASSERT_RECORD(bs_unwind_usage, 104);
BS_ASSERT_RECORD(bs_py_unread, 40);

#endif /* BPFSIGHT_STACK_RECORDS_H */
