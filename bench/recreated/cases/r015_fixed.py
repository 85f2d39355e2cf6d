import torch
from tqdm import tqdm
from torch.optim import Adam

from model import HardSampleAwareNetwork
from utils import comprehensive_similarity, hard_sample_aware_infoNCE, clustering, load_graph_data, setup_args

args = setup_args()
X, y, A = load_graph_data(args.dataset, show_details=False)
node_num = X.shape[0]
X, A = torch.FloatTensor(X).cuda(), torch.FloatTensor(A).cuda()

model = HardSampleAwareNetwork(
    input_dim=X.shape[1], hidden_dim=args.dims, act=args.activate, n_num=node_num).cuda()
optimizer = Adam(model.parameters(), lr=args.lr)

mask = torch.ones([node_num * 2, node_num * 2]) - torch.eye(node_num * 2)
mask = mask.cuda()
pos_weight = torch.ones(node_num * 2).cuda()
pos_neg_weight = torch.ones([node_num * 2, node_num * 2]).cuda()
M = mask
best_acc = 0

for epoch in tqdm(range(args.epochs)):
    # train mode
    model.train()

    # encoding with Eq. (3)-(5)
    Z1, Z2, E1, E2 = model(X, A)

    # calculate comprehensive similarity by Eq. (6)
    S = comprehensive_similarity(Z1, Z2, E1, E2, model.alpha)

    # calculate hard sample aware contrastive loss by Eq. (10)-(11)
    loss = hard_sample_aware_infoNCE(S, M, pos_neg_weight, pos_weight, node_num)

    # optimization
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

    # testing and update weights of sample pairs
    if epoch % 10 == 0:
        model.eval()
        with torch.no_grad():
            Z1, Z2, E1, E2 = model(X, A)
            acc, nmi, ari, f1, P = clustering(Z1, Z2, y, args.cluster_num)
        if acc > best_acc:
            best_acc = acc
print("ACC {:.2f}".format(best_acc))
