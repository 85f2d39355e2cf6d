import argparse
import logging
import os
import time
from contextlib import contextmanager

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

import datasets
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, default_data_collator

LOGGER = logging.getLogger(__name__)


@contextmanager
def rank0_first():
    rank = dist.get_rank()
    if rank == 0:
        yield
    dist.barrier()
    if rank > 0:
        yield
    dist.barrier()


def _load_and_preprocess_data(args, tokenizer, config):
    data = datasets.load_dataset(args.dataset_name, trust_remote_code=True, cache_dir=args.dataset_cache_root)
    column_names = data["train"].column_names
    text_column_name = "text" if "text" in column_names else column_names[0]

    def tokenize_function(examples):
        return tokenizer(examples[text_column_name])

    tokenized_datasets = data.map(tokenize_function, batched=True, remove_columns=column_names, num_proc=8)
    seq_length = args.seq_length or tokenizer.model_max_length
    if seq_length > config.max_position_embeddings:
        seq_length = min(1024, config.max_position_embeddings)

    def group_texts(examples):
        concatenated_examples = {k: sum(examples[k], []) for k in examples.keys()}
        total_length = len(concatenated_examples[list(examples.keys())[0]])
        if total_length > seq_length:
            total_length = (total_length // seq_length) * seq_length
        result = {k: [t[i: i + seq_length] for i in range(0, total_length, seq_length)]
                  for k, t in concatenated_examples.items()}
        result["labels"] = result["input_ids"].copy()
        return result

    lm_datasets = tokenized_datasets.map(group_texts, batched=True, num_proc=8)
    return lm_datasets["train"]


def main():
    parser = _get_parser()
    args = parser.parse_args()

    dist.init_process_group()

    rank = dist.get_rank()
    local_rank = rank % torch.cuda.device_count()
    world_size = dist.get_world_size()

    logging.basicConfig(format=f"[rank={rank}] [%(asctime)s] %(levelname)s:%(message)s", level=logging.INFO)
    LOGGER.info(os.environ)
    LOGGER.info(args)
    LOGGER.info(f"local_rank={local_rank} rank={rank} world size={world_size}")

    device = torch.device(f"cuda:{local_rank}")
    dtype = torch.bfloat16
    torch.cuda.set_device(device)

    torch.manual_seed(args.seed)

    with rank0_first():
        config = AutoConfig.from_pretrained(args.model_name, use_cache=False)
        with device:
            model = AutoModelForCausalLM.from_config(config, torch_dtype=dtype)
    LOGGER.info(f"{sum(p.numel() for p in model.parameters())} model parameters")

    model = DistributedDataParallel(model, device_ids=[local_rank])

    with rank0_first():
        tokenizer = AutoTokenizer.from_pretrained(args.model_name)
        train_data = _load_and_preprocess_data(args, tokenizer, config)
    LOGGER.info(f"{len(train_data)} training samples")

    dataloader = DataLoader(
        train_data,
        batch_size=args.batch_size,
        collate_fn=default_data_collator,
        num_workers=1,
        prefetch_factor=2,
        sampler=DistributedSampler(train_data, drop_last=True),
    )
    LOGGER.info(f"{len(dataloader)} batches per epoch")

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, fused=True)
    lr_scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=1000, eta_min=args.lr * 1e-2)

    state = {"epoch": 0, "global_step": 0, "running_loss": 0}
    timers = {"data": 0.0, "step": 0.0}

    for state["epoch"] in range(state["epoch"], args.num_epochs):
        LOGGER.info(f"Begin epoch {state['epoch']} at step {state['global_step']}")

        progress_bar = range(len(dataloader))
        batches = iter(dataloader)

        for i_step in progress_bar:
            start = time.time()
            batch = next(batches)
            batch = {k: v.to(device=device) for k, v in batch.items()}
            timers["data"] += time.time() - start

            start = time.time()
            outputs = model(**batch)

            optimizer.zero_grad()
            outputs.loss.backward()
            optimizer.step()
            lr_scheduler.step()
            timers["step"] += time.time() - start

            state["global_step"] += 1
            state["running_loss"] += outputs.loss.item()

            if state["global_step"] % args.log_freq == 0:
                LOGGER.info({"lr": lr_scheduler.get_last_lr()[0],
                             "running_loss": state["running_loss"] / args.log_freq,
                             "epoch": state["epoch"]})
                state["running_loss"] = 0
                timers = {k: 0.0 for k in timers}

    dist.destroy_process_group()


def _get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("-e", "--experiment-name", default=None)
    parser.add_argument("-d", "--dataset-name", default=None, required=True)
    parser.add_argument("--dataset-subset", default=None)
    parser.add_argument("-m", "--model-name", default=None, required=True)
    parser.add_argument("--save-dir", default="../outputs")
    parser.add_argument("--seed", default=0, type=int)
    parser.add_argument("--num-epochs", default=100, type=int)
    parser.add_argument("--lr", default=3e-5, type=float)
    parser.add_argument("-b", "--batch-size", default=1, type=int)
    parser.add_argument("--log-freq", default=100, type=int)
    parser.add_argument("-s", "--seq-length", default=None, type=int)
    parser.add_argument("--dataset-cache-root", default="../.cache")
    return parser


if __name__ == "__main__":
    main()
