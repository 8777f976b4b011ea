"""mcl.mcpl"""
