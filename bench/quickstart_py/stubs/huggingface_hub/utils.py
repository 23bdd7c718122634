"""Import stub of huggingface_hub.utils (see ../README.md)."""


class GatedRepoError(Exception):
    pass


class RepositoryNotFoundError(Exception):
    pass
