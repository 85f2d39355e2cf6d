import torch
import torch.nn as nn
from torch.optim import AdamW
from tqdm import tqdm
from transformers import BertConfig, BertModel


class BertClassifier(nn.Module):
    def __init__(self, bert_config, num_labels):
        super().__init__()
        # 定义BERT模型
        self.bert = BertModel(config=bert_config)
        # 定义分类器
        self.classifier = nn.Linear(bert_config.hidden_size, num_labels)

    def forward(self, input_ids, attention_mask, token_type_ids):
        # BERT的输出
        bert_output = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        # 取[CLS]位置的pooled output
        pooled = bert_output[1]
        # 分类
        logits = self.classifier(pooled)
        return logits


def main(train_dataloader, num_labels, bert_path='bert-base-chinese', epochs=10, device='cuda'):
    bert_config = BertConfig.from_pretrained(bert_path)
    model = BertClassifier(bert_config, num_labels).to(device)
    optimizer = AdamW(model.parameters(), lr=2e-5)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(1, epochs + 1):
        model.train()
        for i, batch in enumerate(tqdm(train_dataloader)):
            input_ids = batch['input_ids'].to(device)
            token_type_ids = batch['token_type_ids'].to(device)
            attention_mask = batch['attention_mask'].to(device)
            label_id = batch['label_id'].to(device)
            # 梯度清零
            optimizer.zero_grad()
            # 传入数据，调用model.forward()
            output = model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            # 计算loss
            loss = criterion(output, label_id)
            loss.backward()
            optimizer.step()
    torch.save(model.state_dict(), 'models/best_model.pkl')
