/* FG_THREAD_LOCAL: a variable each thread has its own copy of (the allocator headers). */
#ifndef FASTGRAD_THREAD_LOCAL_H
#define FASTGRAD_THREAD_LOCAL_H

#if defined(_MSC_VER)
#define FG_THREAD_LOCAL __declspec(thread)
#else
#define FG_THREAD_LOCAL __thread
#endif

#endif
