"""mutate"""
