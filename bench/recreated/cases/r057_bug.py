import torch
from torch.utils.data.distributed import DistributedSampler
from torch_geometric.loader import DataLoader


def dataset_loading_and_splitting(trainset, valset, testset, batch_size):
    train_sampler = DistributedSampler(trainset)
    val_sampler = DistributedSampler(valset)
    test_sampler = DistributedSampler(testset)
    train_loader = DataLoader(trainset, batch_size=batch_size, shuffle=False, sampler=train_sampler)
    val_loader = DataLoader(valset, batch_size=batch_size, shuffle=False, sampler=val_sampler)
    test_loader = DataLoader(testset, batch_size=batch_size, shuffle=False, sampler=test_sampler)
    return train_loader, val_loader, test_loader, [train_sampler, val_sampler, test_sampler]


def train(loader, model, opt, verbosity):
    model.train()
    total_error = 0
    for data in loader:
        opt.zero_grad()
        pred = model(data)
        loss, tasks_rmse, tasks_nodes = model.loss_rmse(pred, data.y)
        loss.backward()
        opt.step()
        total_error += loss.item() * data.num_graphs
    return total_error / len(loader.dataset)


@torch.no_grad()
def validate(loader, model, verbosity):
    model.eval()
    total_error = 0
    for data in loader:
        pred = model(data)
        error, tasks_rmse, tasks_nodes = model.loss_rmse(pred, data.y)
        total_error += error.item() * data.num_graphs
    return total_error / len(loader.dataset)


def train_validate_test(model, optimizer, train_loader, val_loader, test_loader, sampler_list,
                        scheduler, config, verbosity=0):
    num_epoch = config["Training"]["num_epoch"]
    for epoch in range(0, num_epoch):
        train_rmse = train(train_loader, model, optimizer, verbosity)
        val_rmse = validate(val_loader, model, verbosity)
        test_rmse = validate(test_loader, model, verbosity)
        scheduler.step(val_rmse)
        print(f"Epoch: {epoch:02d}, Train RMSE: {train_rmse:.8f}, Val RMSE: {val_rmse:.8f}, Test RMSE: {test_rmse:.8f}")
