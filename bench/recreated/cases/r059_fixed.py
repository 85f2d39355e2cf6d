import torch
import torch.nn as nn
from transformers import BertModel, BertTokenizer

model_dir = 'bert-base-cased'
model_bert = BertModel.from_pretrained(model_dir)
tokenizer = BertTokenizer.from_pretrained('bert-base-cased')
tag_values = ['O', 'B-PER', 'I-PER', 'B-LOC', 'I-LOC', 'PAD']
tag2idx = {t: i for i, t in enumerate(tag_values)}
MAX_LEN = 75


class BERTNER(nn.Module):
    def __init__(self, model, hidden_dim, num_labels):
        """
        Torch model that uses the BERT and adds in a classifiers at the end. Num labels is a list of labels
        """
        super(BERTNER, self).__init__()
        self.model = model
        self.hidden_dim = hidden_dim
        self.num_labels = num_labels
        self.rnn = nn.LSTM(self.model.config.hidden_size, hidden_dim, batch_first=True, bidirectional=True)
        self.classifier = nn.Linear(2 * hidden_dim, num_labels)

    def forward(self, input_ids, attention_mask):
        outputs = self.model(input_ids=input_ids, attention_mask=attention_mask)
        sequence_output = outputs[0]
        out, _ = self.rnn(sequence_output)
        return self.classifier(out)


def pad_to(seqs, value):
    return torch.tensor([s[:MAX_LEN] + [value] * (MAX_LEN - len(s[:MAX_LEN])) for s in seqs])


def encode(sentences, labels):
    input_ids = pad_to([tokenizer.convert_tokens_to_ids(s) for s in sentences], tokenizer.pad_token_id)
    tags = pad_to([[tag2idx[l] for l in lab] for lab in labels], tag2idx["PAD"])
    attention_mask = (input_ids != tokenizer.pad_token_id).long()
    return input_ids, attention_mask, tags


model = BERTNER(model_bert, 128, len(tag2idx))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5)
loss_fn = nn.CrossEntropyLoss(ignore_index=tag2idx["PAD"])


def train_epoch(batches):
    model.train()
    for sentences, labels in batches:
        input_ids, attention_mask, tags = encode(sentences, labels)
        logits = model(input_ids, attention_mask)
        loss = loss_fn(logits.view(-1, len(tag2idx)), tags.view(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
