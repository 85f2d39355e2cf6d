import torch
from tqdm.auto import tqdm, trange


class LanguageModelingModel:
    def __init__(self, model, tokenizer, args, device="cuda"):
        self.model = model
        self.tokenizer = tokenizer
        self.args = args
        self.device = device

    def train(self, train_dataloader, eval_file=None):
        model = self.model
        args = self.args
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
        global_step = 0
        model.zero_grad()
        train_iterator = trange(int(args.num_train_epochs), desc="Epoch")
        model.train()
        for current_epoch in train_iterator:
            batch_iterator = tqdm(train_dataloader, desc=f"Running Epoch {current_epoch}")
            for step, batch in enumerate(batch_iterator):
                inputs, labels = batch
                inputs = inputs.to(self.device)
                labels = labels.to(self.device)
                outputs = model(inputs, labels=labels)
                loss = outputs[0]
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                optimizer.step()
                model.zero_grad()
                global_step += 1

                if args.evaluate_during_training and (
                    args.evaluate_during_training_steps > 0
                    and global_step % args.evaluate_during_training_steps == 0
                ):
                    results = self.eval_model(eval_file)
                    print(results)
        return global_step

    def eval_model(self, eval_dataloader):
        model = self.model
        eval_loss = 0.0
        nb_eval_steps = 0
        model.eval()
        for batch in tqdm(eval_dataloader, desc="Running Evaluation"):
            inputs, labels = batch
            with torch.no_grad():
                outputs = model(inputs.to(self.device), labels=labels.to(self.device))
                eval_loss += outputs[0].mean().item()
            nb_eval_steps += 1
        return {"eval_loss": eval_loss / nb_eval_steps, "perplexity": torch.exp(torch.tensor(eval_loss / nb_eval_steps))}
