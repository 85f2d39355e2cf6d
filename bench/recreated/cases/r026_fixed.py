import torch
import tqdm

from metric_counter import MetricCounter
from models.losses import get_loss
from models.models import get_model
from models.networks import get_nets


class Trainer:
    def __init__(self, config, train, val):
        self.config = config
        self.train_dataset = train
        self.val_dataset = val
        self.adv_lambda = config['model']['adv_lambda']
        self.metric_counter = MetricCounter(config['experiment_desc'])
        self.netG, netD = get_nets(config['model'])
        self.netG.cuda()
        self.model = get_model(config['model'])
        self.criterionG, self.criterionD = get_loss(config['model'])
        self.adv_trainer = self._get_adversarial_trainer(config['model']['d_name'], netD, self.criterionD)

    @torch.no_grad()
    def _validate(self, epoch):
        self.netG = self.netG.eval()
        self.metric_counter.clear()
        epoch_size = self.config.get('val_batches_per_epoch') or len(self.val_dataset)
        tq = tqdm.tqdm(self.val_dataset, total=epoch_size)
        tq.set_description('Validation')
        i = 0
        for data in tq:
            inputs, targets = self.model.get_input(data)
            outputs = self.netG(inputs)
            loss_content = self.criterionG(outputs, targets)
            loss_adv = self.adv_trainer.loss_g(outputs, targets)
            loss_G = loss_content + self.adv_lambda * loss_adv
            self.metric_counter.add_losses(loss_G.item(), loss_content.item())
            curr_psnr, curr_ssim, img_for_vis = self.model.get_images_and_metrics(inputs, outputs, targets)
            self.metric_counter.add_metrics(curr_psnr, curr_ssim)
            if not i:
                self.metric_counter.add_image(img_for_vis, tag='val')
            i += 1
            if i > epoch_size:
                break
        tq.close()
        self.metric_counter.write_to_tensorboard(epoch, validation=True)

    def _get_adversarial_trainer(self, d_name, net_d, criterion_d):
        from adversarial_trainer import GANFactory
        return GANFactory.create_model(d_name, net_d, criterion_d)
