// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * torch's part of the ledger (ledger.h): the frames of its DataLoader. A thread inside an
 * iterator's __next__ waits for its next batch, whatever runs inside (the workers' queue, or
 * the dataset's own code in-process: a region, the job's line the one calling next); a worker
 * waiting for its next index, or the pin-memory thread for its next batch, waits for work.
 */
#include "ledger.h"
#include "torch.h"

#define LOADER "/torch/utils/data/dataloader.py"
#define NEXT   "the DataLoader's next batch"

static const struct ledger_frame_rule torch_frames[] = {
	{ LEDGER_INPUT, LOADER, "_BaseDataLoaderIter.__next__", NEXT, .region = 1 },
	{ LEDGER_INPUT, LOADER, "__next__", NEXT, .region = 1 },
	{ LEDGER_IDLE, "/torch/utils/data/_utils/worker.py", "_worker_loop",
	  "a DataLoader worker's next index", .idle = 1 },
	{ LEDGER_IDLE, "/torch/utils/data/_utils/pin_memory.py", "_pin_memory_loop",
	  "the pin-memory thread's next batch", .idle = 1 },
	{ 0 },
};

const struct family_ledger torch_ledger = {
	.frames = torch_frames,
};
