"""The adjoint of tensor X is named dX and is the gradient of X: read off the tape and the sweep, not off grad_of."""


def misnamed_gradients(document):
    """Every sweep item whose incoming adjoint, or a contribution it hands out, is named after another tensor."""
    tensors = {t["id"]: t for t in document["tensors"]}
    wrong = []
    for item in document["sweep"]:
        output = document["tape"][item["entry"]]["output"]
        adjoint = item.get("adjoint")
        if adjoint is not None and output is not None:
            wrong += _check(item, "adjoint", tensors[adjoint["tensor"]], tensors[output])
        for contribution in item["contributions"]:
            wrong += _check(item, "contribution", tensors[contribution["grad"]], tensors[contribution["to"]])
    return wrong


def _check(item, what, gradient, of):
    names = {f"d{of['name']}", f"{of['name']}.grad"}
    if gradient["name"] in names and gradient.get("grad_of") == of["id"]:
        return []
    return [f"step {item['step']} ({item['backward']}): its {what} {gradient['name']} (grad_of "
            f"{gradient.get('grad_of')}) should be the gradient of {of['name']} (id {of['id']})"]
