"""Validation inside the epoch loop leaves the model in eval mode (TRN703); the fix
inserts `model.train()` at the start of the training phase. Prints how many training
steps ran in eval mode."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 2))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
train_data = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(10)]
val_data = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(3)]


@torch.no_grad()
def validate():
    model.eval()
    return sum(criterion(model(x), y).item() for x, y in val_data) / len(val_data)


def fit(epochs):
    eval_steps = 0
    model.train()
    for epoch in range(epochs):
        for x, y in train_data:
            eval_steps += not model.training
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        print(f"epoch {epoch}: val {validate():.3f}")  # expect: TRN703
    return eval_steps


print("EVAL_STEPS", fit(3))
