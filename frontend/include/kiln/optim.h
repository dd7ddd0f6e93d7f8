#pragma once
/// @file optim.h
/// Everything of kiln::optim: SGD, Adam, AdamW, RMSprop, schedulers, clip_grad_norm_.
#include "kiln/optim/adam.h"
#include "kiln/optim/optimizer.h"
#include "kiln/optim/rmsprop.h"
#include "kiln/optim/scheduler.h"
#include "kiln/optim/sgd.h"
